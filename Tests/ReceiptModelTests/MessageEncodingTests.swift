import Foundation
import Testing

@testable import ReceiptModel

@Suite struct MessageEncodingTests {
    private func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test func resultWritesAbsentValuesAsNull() throws {
        let transaction = VerifiedTransaction(
            TransactionFields(
                transactionId: "1000000460004095", originalTransactionId: "1000000460004095", productId: "gems_100",
                quantity: 1, purchaseDateMs: 1_539_946_248_000),
            environment: .sandbox)
        let result = VerificationResult(
            submissionId: "s-1", orderId: nil, userId: "u", outcome: .verified, reason: nil, message: nil,
            appleStatus: 0, environment: .sandbox, bundleId: "com.example.game", transactions: [transaction],
            attempts: 2, verifiedAtMs: 5)
        let json = try object(VerificationResultJSON.encode(result))

        #expect(json["schema_version"] as? Int == 1)
        #expect(json["outcome"] as? String == "verified")
        #expect(json["reason"] is NSNull)
        #expect(json["order_id"] is NSNull)
        #expect(json["environment"] as? String == "Sandbox")
        let transactions = try #require(json["transactions"] as? [[String: Any]])
        #expect(transactions.count == 1)
        #expect(transactions[0]["credit_key"] as? String == "apple:sandbox:1000000460004095")
        #expect(transactions[0]["quantity"] as? Int == 1)
        #expect(transactions[0]["expires_date_ms"] is NSNull)
        #expect(transactions[0]["is_trial_period"] as? Bool == false)

        #expect(
            try MessageCoding.decode(VerificationResult.self, from: VerificationResultJSON.encode(result)) == result)
    }

    @Test func everyReasonHasTheContractName() {
        #expect(
            Set(Reason.allCases.map(\.rawValue)) == [
                "invalid_receipt", "invalid_signature", "bundle_mismatch", "transaction_not_found",
                "product_mismatch", "unknown_product", "account_mismatch", "refunded", "no_purchases",
                "sandbox_not_allowed", "malformed_submission", "apple_unavailable", "config_error",
            ])
        let failing: Set<Reason> = [.malformedSubmission, .appleUnavailable, .configError]
        for reason in Reason.allCases {
            #expect(reason.outcome == (failing.contains(reason) ? .failed : .rejected), "\(reason)")
        }
        #expect(Set(VerificationSource.allCases.map(\.rawValue)) == ["verify_receipt", "server_api", "signed_transaction"])
    }

    @Test func deadLetterRecordKeepsTheOriginalBytes() throws {
        let original: [UInt8] = [0xff, 0x00, 0x7b]
        let record = DeadLetterRecord(
            submissionId: nil, reason: .malformedSubmission, message: "not valid JSON", sourceTopic: "t",
            sourcePartition: 3, sourceOffset: 17, originalKey: nil, originalValue: original, appleStatus: nil,
            attempts: 0, failedAtMs: 1)
        let json = try object(try MessageCoding.encode(record))
        #expect(json["submission_id"] is NSNull)
        #expect(json["source_partition"] as? Int == 3)
        #expect(Base64.decode(try #require(json["original_value"] as? String)) == original)
    }

    @Test func retryRecordRoundTrips() throws {
        let submission = Submission(submissionId: "s", receiptData: "YQ==", submittedAtMs: 3)
        let record = RetryRecord(
            submission: submission, round: 1, attempts: 4, notBeforeMs: 99, lastAppleStatus: 21005,
            lastError: "apple status 21005")
        let written = RetryRecordJSON.encode(record)
        #expect(try MessageCoding.decode(RetryRecord.self, from: written) == record)
        // JSONEncoder's bytes (`WrittenJSON`): absent optional members omitted, the submission as `SubmissionJSON`
        // writes it.
        #expect(written == (try WrittenJSON.canonical(written)))
        #expect(
            try WrittenJSON.memberNames(written) == [
                ["attempts", "last_apple_status", "last_error", "not_before_ms", "round", "schema_version", "submission"]
            ])
        #expect(String(decoding: written, as: UTF8.self).hasSuffix(
            #""submission":\#(String(decoding: SubmissionJSON.encode(submission), as: UTF8.self))}"#))
        var withSource = record
        withSource.lastAppleStatus = nil
        withSource.source = .serverAPI
        let sourced = RetryRecordJSON.encode(withSource)
        #expect(sourced == (try WrittenJSON.canonical(sourced)))
        #expect(
            try WrittenJSON.memberNames(sourced) == [
                ["attempts", "last_error", "not_before_ms", "round", "schema_version", "source", "submission"]
            ])
        #expect(try MessageCoding.decode(RetryRecord.self, from: sourced) == withSource)
    }
}
