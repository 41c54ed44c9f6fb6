import Foundation
import Ingest
import Testing

@Suite("POST /v1/receipts body parsing")
struct SubmissionRequestTests {
    private func parse(_ json: String) throws(APIError) -> SubmissionRequest {
        try SubmissionRequest.parse(Array(json.utf8))
    }

    private func code(_ json: String) -> String? {
        do {
            _ = try parse(json)
            return nil
        } catch {
            #expect(error.status == 400)
            return error.code
        }
    }

    @Test("contract fields are taken as given")
    func contractFields() throws {
        let request = try parse(
            """
            {"receipt_data":"aGVsbG8=","order_id":"o-1","user_id":"u-1","expected_transaction_id":"1000",
             "expected_product_id":"com.example.gems","submission_id":"s-1","unknown":{"ignored":true}}
            """)
        #expect(
            request
                == SubmissionRequest(
                    submissionId: "s-1", receiptData: "aGVsbG8=", orderId: "o-1", userId: "u-1",
                    expectedTransactionId: "1000", expectedProductId: "com.example.gems"))
    }

    @Test("iOS aliases map to the contract fields")
    func aliases() throws {
        let request = try parse(#"{"receipt":"aGVsbG8=","orderNo":"A-9","transactionId":"2000","sandbox":true}"#)
        #expect(request.receiptData == "aGVsbG8=")
        #expect(request.orderId == "A-9")
        #expect(request.expectedTransactionId == "2000")
        #expect(request.sandbox == true)
        #expect(request.submissionId == nil)
    }

    @Test("ids sent as JSON integers become their decimal text")
    func numericIds() throws {
        let request = try parse(#"{"receipt":"aGVsbG8=","orderNo":123456789012,"transactionId":1000000123}"#)
        #expect(request.orderId == "123456789012")
        #expect(request.expectedTransactionId == "1000000123")
    }

    @Test("line breaks and spaces in the base64 are removed")
    func base64Normalized() throws {
        let request = try parse(#"{"receipt_data":"aGVs\nbG8g\r\nd29y bGQ="}"#)
        #expect(request.receiptData == "aGVsbG8gd29ybGQ=")
    }

    @Test("empty optional strings count as absent")
    func emptyOptionals() throws {
        let request = try parse(#"{"receipt_data":"aGVsbG8=","order_id":"","user_id":null}"#)
        #expect(request.orderId == nil)
        #expect(request.userId == nil)
    }

    @Test("the same value under a field and its alias is fine; different values are refused")
    func conflictingAliases() throws {
        #expect(try parse(#"{"receipt_data":"aGVsbG8=","receipt":"aGVsbG8="}"#).receiptData == "aGVsbG8=")
        #expect(code(#"{"receipt_data":"aGVsbG8=","receipt":"d29ybGQ="}"#) == "conflicting_fields")
        #expect(code(#"{"receipt":"aGVsbG8=","order_id":"a","orderNo":"b"}"#) == "conflicting_fields")
    }

    @Test("problems are 400 with a code naming them", arguments: [
        ("not json", "invalid_json"),
        ("[1,2]", "invalid_json"),
        ("{}", "missing_receipt"),
        (#"{"receipt_data":"   "}"#, "missing_receipt"),
        (#"{"receipt_data":"not base64!"}"#, "invalid_receipt"),
        (#"{"receipt_data":"abc"}"#, "invalid_receipt"),
        (#"{"receipt_data":12}"#, "invalid_field"),
        (#"{"receipt_data":"eyJhbGciOiJFUzI1NiJ9.eyJ0eCI6MX0.c2ln"}"#, "storekit2_transaction"),
        (#"{"receipt_data":"aGVsbG8=","sandbox":"yes"}"#, "invalid_field"),
        (#"{"receipt_data":"aGVsbG8=","order_id":1.5}"#, "invalid_field"),
        (#"{"receipt_data":"aGVsbG8=","user_id":true}"#, "invalid_field"),
        (#"{"receipt_data":"aGVsbG8=","user_id":{"a":1}}"#, "invalid_field"),
    ])
    func rejected(body: String, expected: String) {
        #expect(code(body) == expected)
    }

    @Test("the StoreKit 2 refusal says what to send instead")
    func jwsMessage() {
        do {
            _ = try parse(#"{"receipt":"eyJhbGciOiJFUzI1NiJ9.eyJ0eCI6MX0.c2ln"}"#)
            Issue.record("a JWS was accepted")
        } catch {
            #expect(error.message.contains("appStoreReceiptURL"))
        }
    }

    @Test("over-long id fields are refused")
    func longField() {
        let long = String(repeating: "x", count: SubmissionRequest.maximumFieldLength + 1)
        #expect(code(#"{"receipt_data":"aGVsbG8=","user_id":"\#(long)"}"#) == "invalid_field")
    }

    @Test("the submission carries the normalized fields, the id and the time")
    func submission() throws {
        let request = try parse(#"{"receipt":"aGVs\nbG8=","orderNo":7,"user_id":"u"}"#)
        let submission = request.submission(id: "id-1", submittedAtMs: 1_700_000_000_000)
        #expect(submission.submissionId == "id-1")
        #expect(submission.receiptData == "aGVsbG8=")
        #expect(submission.orderId == "7")
        #expect(submission.userId == "u")
        #expect(submission.submittedAtMs == 1_700_000_000_000)
        #expect(submission.schemaVersion == 1)
        #expect(submission.partitionKey == "u")
    }
}
