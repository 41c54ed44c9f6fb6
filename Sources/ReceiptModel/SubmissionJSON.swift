import ServiceSupport

/// A submission's JSON, its one writer (alone, and inside a retry record: `RetryRecordJSON`): `JSONEncoder`'s bytes
/// (sorted keys, only the proof in use, absent optional fields omitted, slashes unescaped) without `JSONEncoder`'s
/// generic machinery, which escaped each POST's 2 KiB receipt character by character in the ingest (issue 26).
/// `SubmissionJSONTests` hold the bytes to `JSONEncoder`'s form.
public enum SubmissionJSON {
    public static func encode(_ submission: Submission) -> [UInt8] {
        var out = JSONWriter(capacity: 384 + submission.proof.text.utf8.count)
        var first = true
        func member(_ key: StaticString, _ value: String?) {
            guard let value else { return }
            out.member(key, first: first)
            first = false
            out.string(value)
        }
        // Members in sorted key order (as `.sortedKeys` writes them).
        member("client_id", submission.clientId)
        member("expected_app_account_token", submission.expectedAppAccountToken)
        member("expected_product_id", submission.expectedProductId)
        member("expected_transaction_id", submission.expectedTransactionId)
        member("order_id", submission.orderId)
        if case .receipt(let text) = submission.proof { member("receipt_data", text) }
        out.member("schema_version", first: first)
        first = false
        out.number(Int64(submission.schemaVersion))
        if case .signedAppTransaction(let text) = submission.proof { member("signed_app_transaction", text) }
        if case .signedTransaction(let text) = submission.proof { member("signed_transaction", text) }
        member("submission_id", submission.submissionId)
        out.member("submitted_at_ms")
        out.number(submission.submittedAtMs)
        if case .transactionId(let text) = submission.proof { member("transaction_id", text) }
        member("user_id", submission.userId)
        out.raw("}")
        return out.bytes
    }
}
