import Foundation
import Ingest
import Kafka
import ReceiptModel
import ServiceSupport
import Testing
import TestSupport

/// Named API keys in-process (fake Kafka): `client_id` written, results shown only to their client.
@Suite("ingest tenants: named API keys (in-process, fake Kafka)")
struct TenantServiceTests {
    private static let billing = [("Authorization", "Bearer billing-key")]
    private static let support = [("Authorization", "Bearer support-key")]
    private static let operations = [("Authorization", "Bearer unnamed-key")]

    private func start() throws -> InProcessIngest {
        try InProcessIngest.start {
            $0.apiKeys = [
                APIKey(name: "billing", key: "billing-key"), APIKey(name: "support", key: "support-key"),
                APIKey(key: "unnamed-key"),
            ]
        }
    }

    @Test("a named key's name is written as client_id; an unnamed key writes none")
    func clientIdWritten() throws {
        let ingest = try start()
        defer { ingest.service.drain() }
        #expect(
            try ingest.post(#"{"receipt_data":"aGVsbG8=","submission_id":"n-1"}"#, headers: Self.billing).status
                == 202)
        #expect(
            try ingest.post(#"{"receipt_data":"aGVsbG8=","submission_id":"n-2"}"#, headers: Self.operations).status
                == 202)
        #expect(try ingest.writtenSubmissions().map(\.clientId) == ["billing", nil])
    }

    @Test("GET shows a result or pending only to its client; others get 404 unknown_submission; unnamed see all")
    func lookups() throws {
        let ingest = try start()
        defer { ingest.service.drain() }
        #expect(
            try ingest.post(#"{"receipt_data":"aGVsbG8=","submission_id":"l-1"}"#, headers: Self.billing).status
                == 202)
        #expect(try ingest.get("/v1/receipts/l-1", headers: Self.billing).status == 202)
        let hiddenPending = try ingest.get("/v1/receipts/l-1", headers: Self.support)
        #expect(hiddenPending.status == 404)
        #expect(hiddenPending.errorCode == "unknown_submission")

        let result = try ResultFixtures.bytes("l-1", clientId: "billing")
        ingest.feed.emit(result)
        #expect(try ingest.get("/v1/receipts/l-1", headers: Self.billing).body == result)
        let hidden = try ingest.get("/v1/receipts/l-1", headers: Self.support)
        #expect(hidden.status == 404)
        #expect(hidden.errorCode == "unknown_submission")
        // The same answer as for an id nobody used: nothing tells the other client it exists.
        #expect(hidden.body == (try ingest.get("/v1/receipts/never-used", headers: Self.support)).body)
        #expect(try ingest.get("/v1/receipts/l-1", headers: Self.operations).body == result)
        // A result written directly to Kafka without client_id is not shown to named keys.
        let direct = try ResultFixtures.bytes("direct-1")
        ingest.feed.emit(direct)
        #expect(try ingest.get("/v1/receipts/direct-1", headers: Self.billing).status == 404)
        #expect(try ingest.get("/v1/receipts/direct-1", headers: Self.operations).body == direct)
    }

    @Test("POST reusing another client's submission_id: 404 telling to use a new id, nothing written")
    func reusedId() throws {
        let ingest = try start()
        defer { ingest.service.drain() }
        let body = #"{"receipt_data":"aGVsbG8=","submission_id":"u-1"}"#
        #expect(try ingest.post(body, headers: Self.billing).status == 202)
        // Pending for billing, and then decided: support can use the id in neither case, nor learn the verdict.
        let whilePending = try ingest.post(body, headers: Self.support)
        #expect(whilePending.status == 404)
        #expect(whilePending.errorCode == "unknown_submission")
        #expect(whilePending.errorMessage?.contains("new submission_id") == true)
        ingest.feed.emit(try ResultFixtures.bytes("u-1", clientId: "billing"))
        let decided = try ingest.post(body, "/v1/receipts?wait_ms=1000", headers: Self.support)
        #expect(decided.status == 404)
        #expect(decided.jsonObject?["outcome"] == nil)
        #expect(ingest.publisher.published.count == 1)
        // Its own client gets the verdict as a resubmission answer.
        #expect(try ingest.post(body, headers: Self.billing).status == 200)
    }

    @Test("wait_ms returns the verdict to the client that submitted it")
    func waitForOwnResult() throws {
        let ingest = try start()
        defer { ingest.service.drain() }
        let result = try ResultFixtures.bytes("w-1", clientId: "billing")
        let feed = ingest.feed
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(300)) { feed.emit(result) }
        let response = try ingest.post(
            #"{"receipt_data":"aGVsbG8=","submission_id":"w-1"}"#, "/v1/receipts?wait_ms=5000", headers: Self.billing)
        #expect(response.status == 200)
        #expect(response.body == result)
    }

    @Test("a wait is not answered with a result of another client for the same id")
    func waitIgnoresForeignResult() throws {
        let ingest = try start()
        defer { ingest.service.drain() }
        let foreign = try ResultFixtures.bytes("w-2", clientId: "support")
        let feed = ingest.feed
        // Another instance's client used the id; its result shows up while billing waits here.
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) { feed.emit(foreign) }
        let response = try ingest.post(
            #"{"receipt_data":"aGVsbG8=","submission_id":"w-2"}"#, "/v1/receipts?wait_ms=800", headers: Self.billing)
        #expect(response.status == 202)
        #expect(response.body != foreign)
    }
}
