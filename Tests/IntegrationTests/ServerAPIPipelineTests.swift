import Crypto
import FakeAppStore
import Foundation
import Kafka
import ReceiptModel
import ServiceSupport
import Testing

import TestPKI
import TestSupport

/// StoreKit 2 and the App Store Server API through the real processes: submissions produced to Kafka (as high-volume
/// backends do) -> receipt-verifier -> the fake App Store's Server API (bearer tokens checked, transactions signed
/// with a PKI minted for the test) -> results and DLQ.
@Suite(.serialized) struct ServerAPIPipelineTests {
    /// A PKI and API key minted into a temporary directory (what `make dev` does with `fake-appstore mint-pki`), plus
    /// a receipt-signing CA whose root the verifier trusts for `RECEIPT_BACKEND=server-api`.
    final class Keys: Sendable {
        let directory: String
        let minted: FakePKIFiles.Minted
        let receiptSigner: MintedCertificate
        let receiptIntermediate: Certificate
        let receiptRootPath: String
        let creationTime: Int64

        init() throws {
            directory = NSTemporaryDirectory() + "server-api-pipeline-\(UUID().uuidString)"
            minted = try FakePKIFiles.mint(into: directory)
            creationTime = Int64(Date().timeIntervalSince1970)
            let root = try CertificateAuthority.makeRoot(
                commonName: "Test Receipt Root", notBefore: creationTime - 86_400, notAfter: creationTime + 86_400)
            let intermediate = try root.issueIntermediate(
                notBefore: creationTime - 86_400, notAfter: creationTime + 86_400)
            receiptSigner = try intermediate.issueLeaf(notBefore: creationTime - 86_400, notAfter: creationTime + 86_400)
            receiptIntermediate = intermediate.authority.certificate
            receiptRootPath = directory + "/receipt-root.pem"
            try root.authority.pem.write(toFile: receiptRootPath, atomically: true, encoding: .utf8)
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        /// A receipt of `bundleId` holding `transactionIds`, signed by the receipt CA.
        func receipt(bundleId: String, transactionIds: [String]) throws -> String {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime]
            let created = Array(formatter.string(from: Date(timeIntervalSince1970: TimeInterval(creationTime))).utf8)
            func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
                let count = content.count
                return [tag] + (count < 128 ? [UInt8(count)] : [0x82, UInt8(count >> 8), UInt8(count & 0xff)]) + content
            }
            func attribute(_ type: Int, _ value: [UInt8]) -> [UInt8] {
                let typeBytes: [UInt8] = type < 128 ? [UInt8(type)] : [UInt8(type >> 8), UInt8(type & 0xff)]
                return tlv(0x30, tlv(0x02, typeBytes) + tlv(0x02, [1]) + tlv(0x04, value))
            }
            var attributes = [
                attribute(0, tlv(0x0c, Array("Production".utf8))), attribute(2, tlv(0x0c, Array(bundleId.utf8))),
                attribute(12, tlv(0x16, created)),
            ]
            for id in transactionIds {
                attributes.append(
                    attribute(
                        17,
                        tlv(
                            0x31,
                            attribute(1703, tlv(0x0c, Array(id.utf8))) + attribute(1702, tlv(0x0c, Array("gems_100".utf8)))
                        )))
            }
            let signed = try PKCS7SignedData.sign(
                content: tlv(0x31, attributes.flatMap { $0 }), signer: receiptSigner, intermediates: [receiptIntermediate])
            return Data(signed).base64EncodedString()
        }
    }

    /// `jws` with the first character of its signature segment replaced by a different one (so the signature's
    /// first byte changes): never valid, whatever bytes were minted. Overwriting the last characters with fixed
    /// text instead leaves the JWS valid whenever it already ended that way (its last character also carries 4
    /// unused bits).
    static func forged(_ jws: String) throws -> String {
        let dot = try #require(jws.lastIndex(of: "."))
        let first = jws.index(after: dot)
        try #require(first < jws.endIndex)
        let replacement = jws[first] == "A" ? "g" : "A"
        return String(jws[...dot]) + replacement + String(jws[jws.index(after: first)...])
    }

    static func submission(_ id: String, _ proof: PurchaseProof, expectedTransactionId: String? = nil) -> Submission {
        Submission(
            submissionId: id, proof: proof, orderId: "order-\(id)", userId: "user-\(id)",
            expectedTransactionId: expectedTransactionId, submittedAtMs: SystemTime.wallMilliseconds())
    }

    @Test func withAnAPIKeyEachProofIsVerifiedWithTheServerAPIAndCreditedUnderOneKey() async throws {
        let keys = try Keys()
        let pipeline = try await Pipeline.start(
            fakeArguments: ["--latency-ms", "5"] + keys.minted.fakeArguments, withIngest: true,
            verifierSettings: keys.minted.verifierSettings.merging([
                "RECEIPT_BACKEND": "server-api", "APPLE_RECEIPT_ROOT_CERTIFICATES": keys.receiptRootPath,
            ]) { $1 })
        // What the device holds for 9005 is signed before Apple refunds it.
        let refundedLater = try await pipeline.fake.signedTransaction(id: "1000000000009005")
        try await pipeline.fake.registerTransactions([
            ["id": "1000000000009002", "environment": "Sandbox"],
            ["id": "1000000000009003", "customer": "c9", "purchase_date_ms": 1_700_000_000_001],
            ["id": "1000000000009004", "customer": "c9", "purchase_date_ms": 1_700_000_000_002],
            ["id": "1000000000009005", "revocation_date_ms": 1_700_000_500_000],
        ])
        let signed = try await pipeline.fake.signedTransaction(id: "1000000000009001")
        let receipt = try keys.receipt(bundleId: "com.example.game", transactionIds: ["1000000000009003"])
        let submissions = [
            Self.submission("st-1", .signedTransaction(signed)),
            Self.submission("ti-1", .transactionId("1000000000009001")),
            Self.submission("ti-sandbox", .transactionId("1000000000009002")),
            Self.submission("rd-1", .receipt(receipt)),
            Self.submission("st-refunded", .signedTransaction(refundedLater), expectedTransactionId: "1000000000009005"),
            Self.submission("st-forged", .signedTransaction(try Self.forged(signed))),
        ]
        for submission in submissions { try await pipeline.produce(submission) }
        // The same proofs through the ingest's HTTP API.
        let viaIngest = [
            try await pipeline.submitThroughIngest(["signed_transaction": signed, "submission_id": "http-st"]),
            try await pipeline.submitThroughIngest(["transaction_id": "1000000000009001", "submission_id": "http-ti"]),
        ]
        let ids = submissions.map(\.submissionId) + viaIngest
        #expect(await pipeline.waitForResults(ids), "results: \(pipeline.results.answeredIds())")
        for id in viaIngest {
            let result = try #require(try pipeline.results.results(for: id).first)
            #expect(result.outcome == .verified && result.source == .serverAPI, "\(id)")
            #expect(result.transactions.map(\.creditKey) == ["apple:production:1000000000009001"])
        }

        let signedResult = try #require(try pipeline.results.results(for: "st-1").first)
        #expect(signedResult.outcome == .verified)
        #expect(signedResult.source == .serverAPI)
        #expect(signedResult.environment == .production)
        #expect(signedResult.transactions.map(\.creditKey) == ["apple:production:1000000000009001"])
        #expect(signedResult.submissionFingerprint != nil)

        let byId = try #require(try pipeline.results.results(for: "ti-1").first)
        #expect(byId.outcome == .verified && byId.source == .serverAPI)
        #expect(byId.transactions.map(\.creditKey) == signedResult.transactions.map(\.creditKey))

        let sandbox = try #require(try pipeline.results.results(for: "ti-sandbox").first)
        #expect(sandbox.outcome == .verified && sandbox.environment == .sandbox)
        #expect(sandbox.transactions.map(\.creditKey) == ["apple:sandbox:1000000000009002"])
        #expect(try await pipeline.fake.serverAPICalls(transaction: "1000000000009002") == (1, 1))

        let fromReceipt = try #require(try pipeline.results.results(for: "rd-1").first)
        #expect(fromReceipt.outcome == .verified && fromReceipt.source == .serverAPI)
        // The receipt's own purchase (its in_app); 9004, bought later, is in Apple's history of that customer.
        #expect(fromReceipt.transactions.map(\.creditKey) == ["apple:production:1000000000009003"])

        let refunded = try #require(try pipeline.results.results(for: "st-refunded").first)
        #expect(refunded.outcome == .rejected && refunded.reason == .refunded && refunded.source == .serverAPI)

        let forged = try #require(try pipeline.results.results(for: "st-forged").first)
        #expect(forged.outcome == .rejected && forged.reason == .invalidSignature)
        #expect(forged.source == .signedTransaction)
        #expect(forged.message?.contains("signature") == true)

        // Every Server API call carried a valid token: the fake refused none.
        let verifier = try #require(pipeline.runningVerifiers.first)
        #expect(await verifier.metricSum("appstore_server_api_calls_total", labels: ["outcome=\"unauthorized\""]) == 0)
        #expect((await verifier.metricSum("appstore_server_api_calls_total", labels: ["outcome=\"ok\""]) ?? 0) >= 4)
        // The Server API's metric families (registered only with an API key) are in the operator's guide.
        let scrape = try await TestHTTPClient.send("GET", verifier.url("/metrics"))
        let families = Set(
            scrape.text.split(separator: "\n").compactMap { line -> String? in
                let parts = line.split(separator: " ")
                return parts.count >= 3 && parts[0] == "#" && parts[1] == "TYPE" ? String(parts[2]) : nil
            }
        ).filter { $0.hasPrefix("appstore_server_api_") }
        // Calls, refusals, pacing, holds, durations, the not-found memory's entries and use, and the moves to the
        // sandbox (a transaction production does not know, or a production 401 before the app's first release).
        #expect(families.count == 8, "\(families.sorted())")
        let guide = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("docs/OPERATIONS.md"), encoding: .utf8)
        #expect(families.filter { !guide.contains("`\($0)`") && !guide.contains("`\($0){") }.isEmpty)
        await pipeline.shutdown()
    }

    @Test func withoutAnAPIKeySignedTransactionsAreVerifiedLocallyAndTransactionIdsFailWithConfigError() async throws {
        let keys = try Keys()
        // Only the root: no API key, so SIGNED_TRANSACTION_CONFIRM defaults to never.
        let pipeline = try await Pipeline.start(
            fakeArguments: ["--latency-ms", "5"] + keys.minted.fakeArguments,
            verifierSettings: ["APPLE_ROOT_CERTIFICATES": keys.minted.path(FakePKIFiles.rootFile)])
        let signed = try await pipeline.fake.signedTransaction(id: "1000000000009101")
        let submissions = [
            Self.submission("local-1", .signedTransaction(signed)),
            Self.submission("id-1", .transactionId("1000000000009101")),
        ]
        for submission in submissions { try await pipeline.produce(submission) }
        #expect(await pipeline.waitForResults(submissions.map(\.submissionId)))

        let local = try #require(try pipeline.results.results(for: "local-1").first)
        #expect(local.outcome == .verified)
        #expect(local.source == .signedTransaction)
        #expect(local.transactions.map(\.creditKey) == ["apple:production:1000000000009101"])
        #expect(try await pipeline.fake.serverAPICalls(transaction: "1000000000009101") == (0, 0))

        let byId = try #require(try pipeline.results.results(for: "id-1").first)
        #expect(byId.outcome == .failed)
        #expect(byId.reason == .configError)
        #expect(byId.source == .serverAPI)
        for setting in ["APPLE_ISSUER_ID", "APPLE_KEY_ID", "APPLE_PRIVATE_KEY_FILE"] {
            #expect(byId.message?.contains(setting) == true)
        }
        let dead = await eventually(timeout: .seconds(20)) {
            pipeline.deadLetters.messages.contains { message in
                (try? MessageCoding.decode(DeadLetterRecord.self, from: message.value))?.submissionId == "id-1"
            }
        }
        #expect(dead, "the config_error submission is on the DLQ for replay")
        await pipeline.shutdown()
    }

    @Test func aVerifierWithOnlyPartOfTheAPIKeyRefusesToStart() async throws {
        let kafka = try await EmbeddedKafkaProcess.start(topics: [("iap.receipts.submitted", 1)])
        let process = try ManagedProcess(
            executable: try TestBinaries.path("receipt-verifier"),
            environment: kafka.environment.merging([
                "ALLOWED_BUNDLE_IDS": "com.example.game", "APPLE_ISSUER_ID": "issuer", "APPLE_KEY_ID": "key",
                "VERIFIER_METRICS_LISTEN": "127.0.0.1:0",
            ]) { $1 })
        let status = await process.waitForExit(timeout: .seconds(20))
        #expect(status != nil && status != 0)
        #expect(process.stderrTail().contains("APPLE_PRIVATE_KEY_FILE"))
        _ = await kafka.stop()
    }
}
