import Foundation
import Ingest
import Kafka
import ReceiptModel
import ServiceSupport
import Testing
import TestSupport

/// `POST /v1/receipts` in-process (fake Kafka): the three kinds of proof, the seed iOS client, resubmissions
/// (409, answers from the index, a failed result written again), authentication from the head and the bound on
/// buffered bodies.
@Suite("ingest submissions: proofs, seed client, resubmissions, body memory (in-process, fake Kafka)")
struct SubmissionServiceTests {
    @Test("the seed iOS client's exact request is accepted, and its message decodes as the verifier decodes it")
    func seedClient() throws {
        let ingest = try InProcessIngest.start()
        defer { ingest.service.drain() }
        for sandbox in ["0", "1"] {
            // As ApplePayUtils.beginCheckFor sends it: these headers, no Authorization, this body.
            let response = try HTTPTestConnection(port: ingest.port).request(
                "POST", "/v1/receipts",
                headers: [
                    ("Accept", "application/json"), ("Content-Type", "application/json;charset=UTF-8"),
                    ("token", "user-login-token"),
                ],
                body: Array(seedClientBody(sandbox: sandbox).utf8))
            #expect(response.status == 202, "sandbox \(sandbox): \(response.text)")
        }
        let written = try ingest.writtenSubmissions()
        #expect(written.count == 2)
        for submission in written {
            #expect(submission.proof.fieldName == "receipt_data")
            #expect(submission.orderId == "20240501123456789")
            #expect(submission.expectedTransactionId == "1000000912345678")
        }
        // The sandbox flag is a hint only: it is not in the message.
        let messages = ingest.publisher.published.map { String(decoding: $0.value, as: UTF8.self) }
        #expect(messages.allSatisfy { !$0.contains("sandbox") })
    }

    @Test("a signed transaction, a transaction id, or a JWS sent as receipt_data: each written as its proof")
    func proofs() throws {
        let ingest = try InProcessIngest.start()
        defer { ingest.service.drain() }
        let token = "7E3FB20B-4CDB-47CC-936D-99D65F608138"
        #expect(try ingest.post(#"{"signed_transaction":"\#(sampleJWS)","submission_id":"p-1"}"#).status == 202)
        #expect(
            try ingest.post(
                #"{"transaction_id":2000000123456789,"expected_app_account_token":"\#(token)","submission_id":"p-2"}"#
            ).status == 202)
        #expect(try ingest.post(#"{"receipt_data":"\#(sampleJWS)","submission_id":"p-3"}"#).status == 202)
        let invalid = try ingest.post(#"{"signed_transaction":"eyJhbGciOiJub25lIn0.eyJ0eCI6MX0.c2ln"}"#)
        #expect(invalid.status == 400)
        #expect(invalid.errorCode == "invalid_signed_transaction")
        let several = try ingest.post(#"{"signed_transaction":"\#(sampleJWS)","transaction_id":"1"}"#)
        #expect(several.status == 400)
        #expect(several.errorCode == "multiple_proofs")
        let written = try ingest.writtenSubmissions()
        #expect(written.map(\.proof) == [
            .signedTransaction(sampleJWS), .transactionId("2000000123456789"), .signedTransaction(sampleJWS),
        ])
        #expect(written[1].expectedAppAccountToken == token.lowercased())
    }

    @Test("a reused submission_id with another receipt is 409 while pending and once decided; nothing is written")
    func conflict() throws {
        let ingest = try InProcessIngest.start()
        defer { ingest.service.drain() }
        let original = #"{"receipt_data":"aGVsbG8=","submission_id":"c-1"}"#
        let changed = #"{"receipt_data":"aGVsbG8=","submission_id":"c-1","expected_product_id":"com.example.other"}"#
        #expect(try ingest.post(original).status == 202)
        let pendingConflict = try ingest.post(changed)
        #expect(pendingConflict.status == 409)
        #expect(pendingConflict.errorCode == "submission_conflict")
        #expect(pendingConflict.jsonObject?["submission_id"] as? String == "c-1")
        // The same submission again while pending is written again (a client retry).
        #expect(try ingest.post(original).status == 202)
        #expect(ingest.publisher.published.count == 2)

        let result = try ResultFixtures.bytes("c-1")
        ingest.feed.emit(result)
        let answered = try ingest.post(original)
        #expect(answered.status == 200)
        #expect(answered.body == result)
        let decidedConflict = try ingest.post(changed, "/v1/receipts?wait_ms=1000")
        #expect(decidedConflict.status == 409)
        #expect(ingest.publisher.published.count == 2)
        // The conflict never shows the old verdict.
        #expect(decidedConflict.jsonObject?["outcome"] == nil)
        #expect(ingest.scrape().contains(#"ingest_submissions_rejected_total{code="submission_conflict"} 2"#))
    }

    @Test("a failed result is not final: the same submission is written again, pending, then the new verdict")
    func failedResubmitted() throws {
        let ingest = try InProcessIngest.start()
        defer { ingest.service.drain() }
        let body = #"{"receipt_data":"aGVsbG8=","submission_id":"f-1"}"#
        #expect(try ingest.post(body).status == 202)
        let failed = try ResultFixtures.bytes("f-1", outcome: .failed)
        ingest.feed.emit(failed)
        #expect(try ingest.get("/v1/receipts/f-1").body == failed)

        let again = try ingest.post(body)
        #expect(again.status == 202)
        #expect(ingest.publisher.published.count == 2)
        let pending = try ingest.get("/v1/receipts/f-1")
        #expect(pending.status == 202)
        #expect(pending.jsonObject?["status"] as? String == "pending")
        // The replay's (or fresh attempt's) verdict replaces the failure for lookups.
        let verified = try ResultFixtures.bytes("f-1")
        ingest.feed.emit(verified)
        #expect(try ingest.get("/v1/receipts/f-1").body == verified)
        #expect(ingest.scrape().contains(#"ingest_result_messages_total{result="replaced"} 1"#))
        // Now final: answered from the index, not written.
        #expect(try ingest.post(body).body == verified)
        #expect(ingest.publisher.published.count == 2)
    }

    @Test("a failed write releases the id: a corrected submission with the same id is not a conflict")
    func refusedWriteReleasesId() throws {
        let publisher = FakePublisher(.refuse(KafkaError(code: KafkaErrorCode.queueFull, message: "full")))
        let ingest = try InProcessIngest.start(publisher)
        defer { ingest.service.drain() }
        #expect(try ingest.post(#"{"receipt_data":"aGVsbG8=","submission_id":"x-1"}"#).status == 503)
        publisher.setBehaviour(.acknowledge)
        let corrected = #"{"receipt_data":"aGVsbG8=","submission_id":"x-1","expected_transaction_id":"9"}"#
        #expect(try ingest.post(corrected).status == 202)
    }

    @Test("without a valid key the 401 comes from the head, before the body is sent; nothing is buffered")
    func unauthenticatedBodyNeverRead() throws {
        let ingest = try InProcessIngest.start { $0.apiKeys = [APIKey(name: "billing", key: "k1")] }
        defer { ingest.service.drain() }
        let connection = try HTTPTestConnection(port: ingest.port)
        try connection.send(
            "POST /v1/receipts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 900000\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 401)
        #expect(response.errorCode == "unauthorized")
        #expect(ingest.scrape().contains("ingest_http_buffered_body_bytes 0"))
        // A wrong media type is refused from the head too.
        let form = try HTTPTestConnection(port: ingest.port)
        try form.send(
            "POST /v1/receipts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k1\r\n"
                + "Content-Type: text/plain\r\nContent-Length: 900000\r\n\r\n")
        #expect(try form.readResponse().status == 415)
        #expect(ingest.publisher.published.isEmpty)
    }

    @Test("past INGEST_MAX_BUFFERED_BYTES a body gets 503 server_busy with Retry-After, counted; the gauge shows it")
    func bufferedBound() throws {
        let ingest = try InProcessIngest.start {
            $0.maxBufferedBytes = 64 * 1024
            $0.retryAfterSeconds = 4
        }
        defer { ingest.service.drain() }
        let slow = try HTTPTestConnection(port: ingest.port)
        try slow.send(
            "POST /v1/receipts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n")
        // Held as it arrives: 59,000 of the announced 60,000 bytes.
        try slow.send(Array(#"{"receipt_data":""#.utf8) + [UInt8](repeating: UInt8(ascii: "A"), count: 58_983))
        #expect(waitUntil { ingest.scrape().contains("ingest_http_buffered_body_bytes 59000") })
        let busy = try ingest.post(#"{"receipt_data":"\#(String(repeating: "A", count: 8000))"}"#)
        #expect(busy.status == 503)
        #expect(busy.errorCode == "server_busy")
        #expect(busy.headers["retry-after"] == "4")
        #expect(ingest.scrape().contains("ingest_http_busy_refusals_total 1"))
        #expect(ingest.publisher.published.isEmpty)
        // A small body still fits beside the slow one.
        #expect(try ingest.post(#"{"receipt_data":"aGVsbG8="}"#).status == 202)
    }
}
