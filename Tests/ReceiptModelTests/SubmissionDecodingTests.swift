import Testing

@testable import ReceiptModel

@Suite struct SubmissionDecodingTests {
    private func decode(_ json: String) throws(MalformedSubmission) -> Submission {
        try Submission.decodeValidated(from: Array(json.utf8))
    }

    @Test func decodesAContractMessage() throws {
        let submission = try decode(
            """
            {"schema_version":1,"submission_id":"s-1","receipt_data":"TUlJ\\nVGFn","order_id":"o-9","user_id":"u-3",
             "expected_transaction_id":"1000000460004095","expected_product_id":"gems_100","submitted_at_ms":1700000000000,
             "extra_field":{"ignored":true}}
            """)
        #expect(
            submission
                == Submission(
                    submissionId: "s-1", receiptData: "TUlJVGFn", orderId: "o-9", userId: "u-3",
                    expectedTransactionId: "1000000460004095", expectedProductId: "gems_100",
                    submittedAtMs: 1_700_000_000_000))
    }

    @Test func numericIdsAreReadAsTheirDigits() throws {
        let submission = try decode(
            #"{"schema_version":1,"submission_id":"s","receipt_data":"YQ==","expected_transaction_id":1000000460004095,"order_id":42}"#
        )
        #expect(submission.expectedTransactionId == "1000000460004095")
        #expect(submission.orderId == "42")
    }

    @Test func notJSONHasNoRecoverableId() {
        #expect(throws: MalformedSubmission(submissionId: nil, orderId: nil, userId: nil, problem: "not valid JSON")) {
            try decode("{not json")
        }
        #expect(throws: MalformedSubmission(submissionId: nil, orderId: nil, userId: nil, problem: "not a JSON object")) {
            try decode("[1,2]")
        }
    }

    @Test func badReceiptKeepsTheIdsForTheFailedResult() {
        do {
            _ = try decode(#"{"schema_version":1,"submission_id":"s-7","order_id":"o","user_id":"u","receipt_data":"%%%"}"#)
            Issue.record("expected a malformed submission")
        } catch {
            #expect(error.submissionId == "s-7")
            #expect(error.orderId == "o")
            #expect(error.userId == "u")
            #expect(error.problem.contains("not base64"))
        }
    }

    @Test func unsupportedSchemaVersionIsMalformed() {
        #expect(throws: MalformedSubmission.self) {
            try decode(#"{"schema_version":2,"submission_id":"s","receipt_data":"YQ=="}"#)
        }
        #expect(throws: MalformedSubmission.self) {
            try decode(#"{"schema_version":true,"submission_id":"s","receipt_data":"YQ=="}"#)
        }
    }

    @Test func missingOrOverlongIdIsMalformedWithoutId() {
        do {
            _ = try decode(#"{"schema_version":1,"receipt_data":"YQ=="}"#)
            Issue.record("expected a malformed submission")
        } catch {
            #expect(error.submissionId == nil)
        }
        let longId = String(repeating: "x", count: Submission.maximumIdLength + 1)
        do {
            _ = try decode(#"{"schema_version":1,"submission_id":"\#(longId)","receipt_data":"YQ=="}"#)
            Issue.record("expected a malformed submission")
        } catch {
            #expect(error.submissionId == nil)
        }
    }

    @Test func partitionKeyPrefersUserThenOrderThenSubmission() {
        var submission = Submission(submissionId: "s", receiptData: "YQ==", orderId: "o", userId: "u", submittedAtMs: 0)
        #expect(submission.partitionKey == "u")
        submission.userId = nil
        #expect(submission.partitionKey == "o")
        submission.orderId = ""
        #expect(submission.partitionKey == "s")
    }
}
