import FakeAppStore
import Foundation
import ReceiptModel
import ServiceSupport
import Testing

import TestSupport

/// Revocation checks (APPLE_REVOCATION_CHECK=ocsp, the default) through the real processes: receipt-verifier asks
/// the fake App Store's OCSP responder (`POST /ocsp`, APPLE_OCSP_RESPONDER_URL from `FakeAppStoreProcess`) about
/// the leaf and intermediate of the chain that signed each signed transaction.
@Suite(.serialized) struct RevocationPipelineTests {
    /// The fake's chain written to files (with its CA keys, so its responder can sign), no API key: signed
    /// transactions are verified locally, so only the OCSP answer can hold them back.
    private static func start(_ directory: String, withIngest: Bool = false) async throws -> Pipeline {
        let minted = try FakePKIFiles.mint(into: directory)
        return try await Pipeline.start(
            fakeArguments: ["--latency-ms", "5"] + minted.fakeArguments, withIngest: withIngest,
            verifierSettings: [
                "APPLE_ROOT_CERTIFICATES": minted.path(FakePKIFiles.rootFile), "VERIFIER_RETRY_BACKOFF_MS": "2000",
                "VERIFIER_RETRY_ROUNDS": "12",
            ])
    }

    private static func directory() -> String {
        NSTemporaryDirectory() + "revocation-pipeline-\(UUID().uuidString.prefix(8))"
    }

    @Test func aSubmissionWhileTheResponderIsDownIsRetriedThenVerifiedOnceItAnswers() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pipeline = try await Self.start(directory)
        try await pipeline.fake.setOCSP(mode: "fail")
        let signed = try await pipeline.fake.signedTransaction(id: "1000000000007001")
        try await pipeline.produce(ServerAPIPipelineTests.submission("ocsp-down", .signedTransaction(signed)))

        let verifier = try #require(pipeline.runningVerifiers.first)
        // No verdict while the responder fails: a retry record, no result.
        let retried = await eventually(timeout: .seconds(60)) {
            (await verifier.metricSum("verifier_retries_total") ?? 0) >= 1
        }
        #expect(retried, "the submission went to the retry topic")
        #expect(try pipeline.results.results(for: "ocsp-down").isEmpty)
        #expect((await verifier.metricSum("verifier_ocsp_checks_total", labels: ["result=\"unavailable\""]) ?? 0) >= 1)
        #expect(try await pipeline.fake.ocspRequests() >= 1)

        try await pipeline.fake.setOCSP(mode: "answer")
        #expect(await pipeline.waitForResults(["ocsp-down"], timeout: .seconds(90)))
        let results = try pipeline.results.results(for: "ocsp-down")
        #expect(results.count == 1)
        let result = try #require(results.first)
        #expect(result.outcome == .verified, "\(result.reason?.rawValue ?? "") \(result.message ?? "")")
        #expect(result.source == .signedTransaction)
        #expect((await verifier.metricSum("verifier_ocsp_checks_total", labels: ["result=\"good\""]) ?? 0) >= 2)
        #expect(pipeline.deadLetters.messages.isEmpty)
        await pipeline.shutdown()
    }

    @Test func aSignedTransactionWhoseLeafIsRevokedIsRejectedAsInvalidSignature() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pipeline = try await Self.start(directory)
        try await pipeline.fake.setOCSP(revoked: ["leaf"])
        let signed = try await pipeline.fake.signedTransaction(id: "1000000000007002")
        try await pipeline.produce(ServerAPIPipelineTests.submission("ocsp-revoked", .signedTransaction(signed)))
        #expect(await pipeline.waitForResults(["ocsp-revoked"]))
        let result = try #require(try pipeline.results.results(for: "ocsp-revoked").first)
        #expect(result.outcome == .rejected)
        #expect(result.reason == .invalidSignature)
        #expect(result.message?.contains("revoked") == true, "\(result.message ?? "")")
        let verifier = try #require(pipeline.runningVerifiers.first)
        #expect(await verifier.metricSum("verifier_ocsp_checks_total", labels: ["result=\"revoked\""]) == 1)
        // The expiry gauge names the chain in use and the trusted root.
        let scrape = try await TestHTTPClient.send("GET", verifier.url("/metrics"))
        for role in ["root", "intermediate", "leaf"] {
            #expect(scrape.text.contains("verifier_certificate_expiry_timestamp_seconds{role=\"\(role)\""), "\(role)")
        }
        await pipeline.shutdown()
    }

    @Test func aNotificationWhileTheResponderIsDownIsHeldThenBecomesAnEventNeverADLQRecord() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pipeline = try await Self.start(directory, withIngest: true)
        let harness = try NotificationHarness()  // only its events collector: the fake signs the notification
        try harness.collectEvents(pipeline)
        try await pipeline.fake.setOCSP(mode: "fail")
        let ingest = try #require(pipeline.ingest)
        let target = ingest.url("/v1/apple/notifications")
        let sent = try await TestHTTPClient.send(
            "POST",
            pipeline.fake.url + "/admin/notifications/send?type=REFUND&transaction_id=2000000000000456&url="
                + (target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target),
            timeout: 30)
        let answer = try #require(sent.jsonObject, "\(sent.status): \(sent.text)")
        let uuid = try #require(answer["notification_uuid"] as? String)
        #expect(answer["delivered"] as? Bool == true, "the ingest took it: \(answer)")

        let verifier = try #require(pipeline.runningVerifiers.first)
        let held = await eventually(timeout: .seconds(60)) {
            (await verifier.metricSum("verifier_notifications_held_total") ?? 0) >= 2
        }
        #expect(held, "the notification was held (and tried again) while no OCSP answer could be had")
        #expect(try harness.eventIds().isEmpty)
        #expect(pipeline.deadLetters.messages.isEmpty, "never a DLQ record for an unavailable revocation status")

        try await pipeline.fake.setOCSP(mode: "answer")
        #expect(await harness.waitForEvents([uuid], timeout: .seconds(90)))
        let event = try #require(try harness.writtenEvents().first { $0.eventId == uuid })
        #expect(event.type == .debit)
        #expect(pipeline.deadLetters.messages.isEmpty)
        harness.close()
        await pipeline.shutdown()
    }
}
