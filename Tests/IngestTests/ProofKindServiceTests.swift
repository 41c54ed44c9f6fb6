import Foundation
import Ingest
import Kafka
import ReceiptModel
import ServiceSupport
import Testing
import TestSupport

/// `INGEST_KEY_PROOFS` in-process (fake Kafka): a limited key's other proof kinds are 403 before anything is written.
@Suite("ingest proof kinds per key (in-process, fake Kafka)")
struct ProofKindServiceTests {
    private static let app = [("Authorization", "Bearer app-key")]
    private static let appRotated = [("Authorization", "Bearer app-key-2")]
    private static let receiptsOnly = [("Authorization", "Bearer receipts-key")]
    private static let backend = [("Authorization", "Bearer backend-key")]
    private static let unnamed = [("Authorization", "Bearer unnamed-key")]
    private static let server = [("Authorization", "Bearer server-key")]

    private func start() throws -> InProcessIngest {
        try InProcessIngest.start {
            $0.apiKeys = [
                APIKey(name: "app", key: "app-key"), APIKey(name: "app", key: "app-key-2"),
                APIKey(name: "receipts", key: "receipts-key"), APIKey(name: "backend", key: "backend-key"),
                APIKey(key: "unnamed-key"), APIKey(name: "server", key: "server-key"),
            ]
            $0.keyProofs = KeyProofLimits([
                "app": [.receiptData, .signedTransaction], "receipts": [.receiptData],
                "server": [.receiptData, .signedTransaction, .transactionId],
            ])
        }
    }

    @Test("a limited key's transaction_id is 403 proof_not_allowed: nothing written, counted by key and kind")
    func transactionIdRefused() throws {
        let ingest = try start()
        defer { ingest.service.drain() }
        for headers in [Self.app, Self.appRotated] {
            let refused = try ingest.post(#"{"transaction_id":"2000000123456789","user_id":"u-1"}"#, headers: headers)
            #expect(refused.status == 403)
            #expect(refused.errorCode == "proof_not_allowed")
            let message = try #require(refused.errorMessage)
            #expect(message.contains("transaction_id") && message.contains("receipt_data, signed_transaction"))
            // Nothing about other keys: their names or limits.
            for other in ["receipts", "backend", "unnamed", "server"] { #expect(!message.contains(other)) }
            #expect(refused.jsonObject?["submission_id"] == nil)
        }
        #expect(ingest.publisher.published.isEmpty)
        let metrics = ingest.scrape()
        #expect(metrics.contains(#"ingest_proof_refusals_total{client="app",proof="transaction_id"} 2"#))
        #expect(metrics.contains(#"ingest_submissions_rejected_total{code="proof_not_allowed"} 2"#))
        // The kinds it may submit pass.
        #expect(try ingest.post(#"{"receipt_data":"aGVsbG8="}"#, headers: Self.app).status == 202)
        #expect(try ingest.post(#"{"signed_transaction":"\#(sampleJWS)"}"#, headers: Self.app).status == 202)
        #expect(try ingest.writtenSubmissions().map(\.clientId) == ["app", "app"])
    }

    @Test("the effective kind counts: a signed transaction sent as receipt_data is signed_transaction")
    func signedTransactionAsReceiptData() throws {
        let ingest = try start()
        defer { ingest.service.drain() }
        let body = #"{"receipt_data":"\#(sampleJWS)"}"#
        let refused = try ingest.post(body, headers: Self.receiptsOnly)
        #expect(refused.status == 403)
        #expect(refused.errorCode == "proof_not_allowed")
        #expect(refused.errorMessage?.contains("signed_transaction") == true)
        #expect(refused.errorMessage?.contains("sent as receipt_data") == true)
        #expect(ingest.scrape().contains(#"ingest_proof_refusals_total{client="receipts",proof="signed_transaction"} 1"#))
        // The same body from a key allowed signed transactions is written as one.
        #expect(try ingest.post(body, headers: Self.app).status == 202)
        #expect(try ingest.writtenSubmissions().map(\.proof) == [.signedTransaction(sampleJWS)])
        #expect(try ingest.post(#"{"receipt_data":"aGVsbG8="}"#, headers: Self.receiptsOnly).status == 202)
    }

    @Test("keys not listed, and unnamed keys, may submit receipts and signed transactions, no bare transaction id")
    func unlistedKeysDefault() throws {
        let ingest = try start()
        defer { ingest.service.drain() }
        for headers in [Self.backend, Self.unnamed] {
            let refused = try ingest.post(#"{"transaction_id":"2000000123456789"}"#, headers: headers)
            #expect(refused.status == 403)
            #expect(refused.errorCode == "proof_not_allowed")
            #expect(refused.errorMessage?.contains("INGEST_KEY_PROOFS") == true)
            #expect(try ingest.post(#"{"receipt_data":"aGVsbG8="}"#, headers: headers).status == 202)
            #expect(try ingest.post(#"{"signed_transaction":"\#(sampleJWS)"}"#, headers: headers).status == 202)
        }
        #expect(try ingest.writtenSubmissions().count == 4)
        #expect(ingest.scrape().contains(#"ingest_proof_refusals_total{client="backend",proof="transaction_id"} 1"#))
    }

    @Test("an app transaction is a device proof: unlisted keys may submit it, a key limited to others gets 403")
    func appTransactions() throws {
        let ingest = try start()
        defer { ingest.service.drain() }
        let body = #"{"signed_app_transaction":"\#(sampleJWS)","user_id":"u-1"}"#
        for headers in [Self.backend, Self.unnamed] { #expect(try ingest.post(body, headers: headers).status == 202) }
        for headers in [Self.receiptsOnly, Self.app] {
            let refused = try ingest.post(body, headers: headers)
            #expect(refused.status == 403)
            #expect(refused.errorCode == "proof_not_allowed")
            #expect(refused.errorMessage?.contains("may not submit signed_app_transaction") == true)
        }
        #expect(
            ingest.scrape().contains(#"ingest_proof_refusals_total{client="receipts",proof="signed_app_transaction"} 1"#))
        #expect(try ingest.writtenSubmissions().map(\.proof) == [.signedAppTransaction(sampleJWS), .signedAppTransaction(sampleJWS)])
        let malformed = try ingest.post(#"{"signed_app_transaction":"abc"}"#, headers: Self.backend)
        #expect(malformed.status == 400)
        #expect(malformed.errorCode == "invalid_signed_app_transaction")
        #expect(malformed.errorMessage?.contains("AppTransaction.shared") == true)
    }

    @Test("a key granted transaction_id by name, or by '*', submits it")
    func grantedTransactionIds() throws {
        let ingest = try InProcessIngest.start {
            $0.apiKeys = [APIKey(name: "backend", key: "backend-key"), APIKey(key: "unnamed-key")]
            $0.keyProofs = KeyProofLimits(["backend": Set(ProofKind.allCases)])
        }
        defer { ingest.service.drain() }
        #expect(try ingest.post(#"{"transaction_id":"2000000123456789"}"#, headers: Self.backend).status == 202)
        #expect(try ingest.post(#"{"transaction_id":"2000000123456789"}"#, headers: Self.unnamed).status == 403)
        #expect(try ingest.writtenSubmissions().map(\.proof) == [.transactionId("2000000123456789")])

        let everyKey = try InProcessIngest.start {
            $0.apiKeys = [APIKey(key: "unnamed-key")]
            $0.keyProofs = KeyProofLimits(unlisted: Set(ProofKind.allCases))
        }
        defer { everyKey.service.drain() }
        #expect(try everyKey.post(#"{"transaction_id":"2000000123456789"}"#, headers: Self.unnamed).status == 202)
    }

    @Test("without INGEST_API_KEYS (no authentication) every kind is accepted, bare transaction ids included")
    func noKeysAcceptEveryKind() throws {
        let ingest = try InProcessIngest.start { $0.apiKeys = [] }
        defer { ingest.service.drain() }
        #expect(try ingest.post(#"{"transaction_id":"2000000123456789"}"#).status == 202)
        #expect(try ingest.post(#"{"receipt_data":"aGVsbG8="}"#).status == 202)
        #expect(try ingest.post(#"{"signed_transaction":"\#(sampleJWS)"}"#).status == 202)
        #expect(try ingest.writtenSubmissions().count == 3)
    }

    @Test("decided before the result index: another client's submission_id or a known verdict does not change the 403")
    func refusedBeforeTheIndex() throws {
        let ingest = try start()
        defer { ingest.service.drain() }
        let body = #"{"transaction_id":"2000000123456789","submission_id":"p-1"}"#
        #expect(try ingest.post(body, headers: Self.server).status == 202)
        ingest.feed.emit(try ResultFixtures.bytes("p-1", clientId: "server"))
        // Not 404 (another client's id) and not the verdict: the kind alone decides, so the answer says nothing
        // about whether the id exists.
        let refused = try ingest.post(body, headers: Self.app)
        #expect(refused.status == 403)
        #expect(refused.errorCode == "proof_not_allowed")
        #expect(refused.body == (try ingest.post(#"{"transaction_id":"1","submission_id":"p-new"}"#, headers: Self.app)).body)
        #expect(ingest.publisher.published.count == 1)
    }

    @Test("a body that is not a valid submission is 400 first, whatever its kind")
    func invalidBodiesAre400() throws {
        let ingest = try start()
        defer { ingest.service.drain() }
        let malformed = try ingest.post(#"{"transaction_id":"12ab"}"#, headers: Self.app)
        #expect(malformed.status == 400)
        #expect(malformed.errorCode == "invalid_transaction_id")
        #expect(ingest.publisher.published.isEmpty)
    }
}
