import Foundation

/// Why a message on the submissions topic cannot be verified. The verifier turns it into a DLQ record and, when the
/// `submission_id` could be recovered, a `failed` / `malformed_submission` result.
public struct MalformedSubmission: Error, Sendable, Equatable, CustomStringConvertible {
    /// The id, when the message was JSON with a usable `submission_id`.
    public let submissionId: String?
    public let orderId: String?
    public let userId: String?
    public let problem: String

    public var description: String { problem }
}

extension Submission {
    /// Upper bound on `submission_id` length; longer ids are refused (they end up in keys, headers and indexes).
    public static let maximumIdLength = 256

    /// Decodes and validates a submission as produced by the ingest or directly by a backend.
    ///
    /// Tolerates what independent producers send: unknown fields, line breaks in the base64, ids as JSON numbers.
    /// The returned submission's `receiptData` is normalized (one line).
    public static func decodeValidated(from bytes: [UInt8]) throws(MalformedSubmission) -> Submission {
        let object: [String: Any]
        do {
            guard let parsed = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
                throw MalformedSubmission(submissionId: nil, orderId: nil, userId: nil, problem: "not a JSON object")
            }
            object = parsed
        } catch let error as MalformedSubmission {
            throw error
        } catch {
            throw MalformedSubmission(submissionId: nil, orderId: nil, userId: nil, problem: "not valid JSON")
        }

        let submissionId = stringField(object["submission_id"])
        let orderId = stringField(object["order_id"])
        let userId = stringField(object["user_id"])
        func malformed(_ problem: String) -> MalformedSubmission {
            let usableId = submissionId.flatMap { $0.isEmpty || $0.count > maximumIdLength ? nil : $0 }
            return MalformedSubmission(submissionId: usableId, orderId: orderId, userId: userId, problem: problem)
        }

        guard let version = intField(object["schema_version"]) else {
            throw malformed("schema_version is missing or not an integer")
        }
        guard version == currentSchemaVersion else {
            throw malformed("schema_version \(version) is not supported (this verifier reads \(currentSchemaVersion))")
        }
        guard let submissionId, !submissionId.isEmpty else { throw malformed("submission_id is missing or empty") }
        guard submissionId.count <= maximumIdLength else {
            throw malformed("submission_id is longer than \(maximumIdLength) characters")
        }
        guard let rawReceipt = object["receipt_data"] as? String else {
            throw malformed("receipt_data is missing or not a string")
        }
        let receipt: String
        do {
            receipt = try ReceiptData.normalize(rawReceipt)
        } catch {
            throw malformed(error.description)
        }
        let submittedAt = intField(object["submitted_at_ms"]).map(Int64.init) ?? 0

        return Submission(
            submissionId: submissionId, receiptData: receipt, orderId: orderId, userId: userId,
            expectedTransactionId: stringField(object["expected_transaction_id"]),
            expectedProductId: stringField(object["expected_product_id"]), submittedAtMs: submittedAt)
    }

    /// A string, or a JSON integer written as its decimal digits (ids sometimes arrive as numbers); null is nil.
    static func stringField(_ value: Any?) -> String? {
        switch value {
        case let string as String: return string
        case let number as NSNumber where !isBoolean(number):
            let double = number.doubleValue
            if double == double.rounded(), abs(double) < 9.0e15 { return String(number.int64Value) }
            return number.stringValue
        default: return nil
        }
    }

    static func intField(_ value: Any?) -> Int? {
        switch value {
        case let number as NSNumber where !isBoolean(number):
            let double = number.doubleValue
            return double == double.rounded() && abs(double) < 9.0e15 ? number.intValue : nil
        case let string as String: return Int(string)
        default: return nil
        }
    }

    private static func isBoolean(_ number: NSNumber) -> Bool {
        // JSONSerialization decodes booleans as NSNumber too; only they carry the `char` type encoding.
        String(cString: number.objCType) == "c"
    }
}
