import Crypto

/// The bytes a submission's `submission_fingerprint` is the SHA-256 of: the normalized proof and the expectations,
/// each as `name=<length>:<value>` (or `name=-` when absent) on its own line, so that no two different submissions
/// share an input. `order_id`, `user_id` and `client_id` are echoed, not judged, and are not part of it.
public enum SubmissionFingerprintInput {
    public static func bytes(of submission: Submission) -> [UInt8] {
        var text = "v1\n"
        text.reserveCapacity(submission.proof.text.utf8.count + 200)
        func line(_ name: String, _ value: String?) {
            text += name
            if let value {
                text += "=\(value.utf8.count):"
                text += value
            } else {
                text += "=-"
            }
            text += "\n"
        }
        line(submission.proof.fieldName, submission.proof.text)
        line("expected_transaction_id", submission.expectedTransactionId)
        line("expected_product_id", submission.expectedProductId)
        line("expected_app_account_token", submission.expectedAppAccountToken)
        return Array(text.utf8)
    }
}

extension Submission {
    /// `submission_fingerprint`: hex SHA-256 of `SubmissionFingerprintInput.bytes(of:)`. A reused `submission_id`
    /// with another fingerprint is a conflict.
    public var fingerprint: String {
        SHA256.hex(SubmissionFingerprintInput.bytes(of: self))
    }
}
