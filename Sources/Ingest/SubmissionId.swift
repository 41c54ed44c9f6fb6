import Foundation
import ReceiptModel

/// Where a submission's id comes from: the body's `submission_id`, else the `Idempotency-Key` header, else a new
/// UUID. Reusing an id (retrying a request) is safe: the verifier gives the same verdict.
public enum SubmissionId {
    /// Resolves the id for a request.
    /// - Throws: `APIError` (400) when the given id is not usable, or when body and header disagree.
    public static func resolve(body: String?, idempotencyKey: String?) throws(APIError) -> String {
        let header = idempotencyKey.flatMap { $0.isEmpty ? nil : $0 }
        if let body {
            try validate(body, source: "submission_id")
            if let header, header != body { throw .conflictingFields("submission_id", "the Idempotency-Key header") }
            return body
        }
        if let header {
            try validate(header, source: "the Idempotency-Key header")
            return header
        }
        return UUID().uuidString.lowercased()
    }

    /// 1 to 256 visible ASCII characters without `/ ? # %` (ids appear in Kafka keys and headers and in
    /// `GET /v1/receipts/{submission_id}`).
    public static func validate(_ id: String, source: String) throws(APIError) {
        guard !id.isEmpty, id.utf8.count <= Submission.maximumIdLength else {
            throw .invalidSubmissionId(source, "must be 1 to \(Submission.maximumIdLength) characters")
        }
        let allowed = id.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: "%"): false
            default: (0x21...0x7E).contains(byte)
            }
        }
        guard allowed else {
            throw .invalidSubmissionId(source, "may only hold visible ASCII characters other than / ? # %")
        }
    }
}
