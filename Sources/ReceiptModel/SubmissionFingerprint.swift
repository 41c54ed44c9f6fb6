import Crypto

/// The bytes a submission's `submission_fingerprint` is the SHA-256 of: the normalized proof and the expectations,
/// each as `name=<length>:<value>` (or `name=-` when absent) on its own line, so that no two different submissions
/// share an input. `order_id`, `user_id` and `client_id` are echoed, not judged, and are not part of it.
public enum SubmissionFingerprintInput {
    public static func bytes(of submission: Submission) -> [UInt8] {
        // Built as bytes directly (it runs on every submission the ingest takes): no intermediate String.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(submission.proof.text.utf8.count + 200)
        bytes.append(contentsOf: "v1\n".utf8)
        func line(_ name: String, _ value: String?) {
            bytes.append(contentsOf: name.utf8)
            if let value {
                bytes.append(UInt8(ascii: "="))
                bytes.append(contentsOf: String(value.utf8.count).utf8)
                bytes.append(UInt8(ascii: ":"))
                bytes.append(contentsOf: value.utf8)
            } else {
                bytes.append(contentsOf: "=-".utf8)
            }
            bytes.append(UInt8(ascii: "\n"))
        }
        line(submission.proof.fieldName, submission.proof.text)
        line("expected_transaction_id", submission.expectedTransactionId)
        line("expected_product_id", submission.expectedProductId)
        line("expected_app_account_token", submission.expectedAppAccountToken)
        return bytes
    }
}

extension Submission {
    /// `submission_fingerprint`: hex SHA-256 of `SubmissionFingerprintInput.bytes(of:)`. A reused `submission_id`
    /// with another fingerprint is a conflict.
    public var fingerprint: String {
        SHA256.hex(SubmissionFingerprintInput.bytes(of: self))
    }
}
