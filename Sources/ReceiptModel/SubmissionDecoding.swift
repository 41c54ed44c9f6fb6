import Foundation

/// Why a message on the submissions topic cannot be verified. The verifier turns it into a DLQ record and, when the
/// `submission_id` could be recovered, a `failed` / `malformed_submission` result.
public struct MalformedSubmission: Error, Sendable, Equatable, CustomStringConvertible {
    /// The id, when the message was JSON with a usable `submission_id`.
    public let submissionId: String?
    public let orderId: String?
    public let userId: String?
    public let clientId: String?
    public let problem: String

    public init(
        submissionId: String?, orderId: String?, userId: String?, clientId: String? = nil, problem: String
    ) {
        self.submissionId = submissionId
        self.orderId = orderId
        self.userId = userId
        self.clientId = clientId
        self.problem = problem
    }

    public var description: String { problem }
}

extension Submission {
    /// Upper bound on `submission_id` length; longer ids are refused (they end up in keys, headers and indexes).
    public static let maximumIdLength = 256
    /// Upper bound on the other id fields (`order_id`, `user_id`, `client_id`, the expected ids).
    public static let maximumFieldLength = 512

    /// Decodes and validates a submission as produced by the ingest or directly by a backend.
    ///
    /// Tolerates what independent producers send: unknown fields, line breaks in the base64, ids as JSON integers
    /// (read as their digits), null for an absent optional field. Refuses everything else: a contract field of the
    /// wrong JSON type is never read as "absent" (an expectation silently dropped would verify a purchase the
    /// submitter did not name). The returned submission's proof is normalized.
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

        // Echoed fields are read leniently first, so that a malformed message still yields a result that names them.
        let submissionId = try? idField(object, "submission_id")
        let orderId = try? idField(object, "order_id")
        let userId = try? idField(object, "user_id")
        let clientId = (try? stringField(object, "client_id")) ?? nil
        func malformed(_ problem: String) -> MalformedSubmission {
            let usableId = submissionId.flatMap { $0 }.flatMap { $0.isEmpty || $0.count > maximumIdLength ? nil : $0 }
            return MalformedSubmission(
                submissionId: usableId, orderId: orderId ?? nil, userId: userId ?? nil, clientId: clientId,
                problem: problem)
        }

        do throws(FieldProblem) {
            guard let version = try integerField(object, "schema_version") else {
                throw FieldProblem("schema_version is missing")
            }
            guard version == Int64(currentSchemaVersion) else {
                throw FieldProblem(
                    "schema_version \(version) is not supported (this verifier reads \(currentSchemaVersion))")
            }
            guard let id = try idField(object, "submission_id"), !id.isEmpty else {
                throw FieldProblem("submission_id is missing or empty")
            }
            guard id.count <= maximumIdLength else {
                throw FieldProblem("submission_id is longer than \(maximumIdLength) characters")
            }
            let proof = try proofField(object)
            let submittedAt = try integerField(object, "submitted_at_ms") ?? 0
            var token: String?
            if let rawToken = try stringField(object, "expected_app_account_token") {
                guard let normalized = AppAccountToken.normalize(rawToken) else {
                    throw FieldProblem("expected_app_account_token is not a UUID")
                }
                token = normalized
            }
            return Submission(
                submissionId: id, proof: proof, clientId: try stringField(object, "client_id"),
                orderId: try idField(object, "order_id"), userId: try idField(object, "user_id"),
                expectedTransactionId: try idField(object, "expected_transaction_id"),
                expectedProductId: try stringField(object, "expected_product_id"),
                expectedAppAccountToken: token, submittedAtMs: submittedAt)
        } catch {
            throw malformed(error.problem)
        }
    }

    struct FieldProblem: Error {
        let problem: String
        init(_ problem: String) { self.problem = problem }
    }

    /// Exactly one of the four proof fields, normalized.
    private static func proofField(_ object: [String: Any]) throws(FieldProblem) -> PurchaseProof {
        let receipt = try stringField(object, "receipt_data", maximumLength: nil)
        let signed = try stringField(object, "signed_transaction", maximumLength: nil)
        let transactionId = try idField(object, "transaction_id")
        let appTransaction = try stringField(object, "signed_app_transaction", maximumLength: nil)
        let present = [receipt, signed, transactionId, appTransaction].compactMap { $0 }.count
        let names = PurchaseProof.fieldNames.joined(separator: ", ")
        guard present == 1 else {
            throw FieldProblem(present == 0 ? "none of \(names) is present" : "more than one of \(names) is present")
        }
        if let receipt {
            do {
                return .receipt(try ReceiptData.normalize(receipt))
            } catch {
                throw FieldProblem(error.description)
            }
        }
        if let signed {
            do {
                return .signedTransaction(try SignedTransactionText.normalize(signed))
            } catch {
                throw FieldProblem(error.description)
            }
        }
        if let appTransaction {
            do {
                return .signedAppTransaction(try SignedTransactionText.normalize(appTransaction))
            } catch {
                throw FieldProblem(error.message(for: .signedAppTransaction))
            }
        }
        guard let transactionId, TransactionIdText.isValid(transactionId) else {
            throw FieldProblem(
                "transaction_id must be Apple's transaction id: the decimal text of a 64-bit unsigned integer "
                    + "(1 to \(TransactionIdText.maximumLength) digits, no leading zeros)")
        }
        return .transactionId(transactionId)
    }

    /// A string, or a JSON integer written as its decimal digits (ids sometimes arrive as numbers). Absent or null:
    /// nil. Any other type: a problem.
    static func idField(_ object: [String: Any], _ name: String) throws(FieldProblem) -> String? {
        switch object[name] {
        case nil, is NSNull:
            return nil
        case let string as String:
            guard string.utf8.count <= maximumFieldLength else {
                throw FieldProblem("\(name) is longer than \(maximumFieldLength) bytes")
            }
            if let problem = IdentifierText.problem(field: name, string) { throw FieldProblem(problem) }
            return string.isEmpty ? nil : string
        case let number as NSNumber where !JSONNumbers.isBoolean(number):
            guard let digits = JSONNumbers.integerText(number) else {
                throw FieldProblem("\(name) must be a string or an integer")
            }
            return digits
        default:
            throw FieldProblem("\(name) must be a string or an integer")
        }
    }

    static func stringField(
        _ object: [String: Any], _ name: String, maximumLength: Int? = maximumFieldLength
    ) throws(FieldProblem) -> String? {
        switch object[name] {
        case nil, is NSNull:
            return nil
        case let string as String:
            if let maximumLength, string.utf8.count > maximumLength {
                throw FieldProblem("\(name) is longer than \(maximumLength) bytes")
            }
            // Identifiers only: the proofs (unlimited) tolerate line breaks, and are checked by their own rules.
            if maximumLength != nil, let problem = IdentifierText.problem(field: name, string) {
                throw FieldProblem(problem)
            }
            return string.isEmpty ? nil : string
        default:
            throw FieldProblem("\(name) must be a string")
        }
    }

    static func integerField(_ object: [String: Any], _ name: String) throws(FieldProblem) -> Int64? {
        switch object[name] {
        case nil, is NSNull:
            return nil
        case let number as NSNumber where !JSONNumbers.isBoolean(number):
            guard let value = JSONNumbers.integer(number) else { throw FieldProblem("\(name) must be an integer") }
            return value
        default:
            throw FieldProblem("\(name) must be an integer")
        }
    }
}

/// Helpers for numbers decoded by `JSONSerialization`.
public enum JSONNumbers {
    /// JSONSerialization decodes `true`/`false` as NSNumber too; only they carry the `char` type encoding.
    public static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }

    /// The number as an integer when it is one exactly (within ±9e15, where doubles are exact).
    public static func integer(_ number: NSNumber) -> Int64? {
        let double = number.doubleValue
        guard double == double.rounded(), abs(double) < 9.0e15 else { return nil }
        return number.int64Value
    }

    public static func integerText(_ number: NSNumber) -> String? {
        integer(number).map { String($0) }
    }
}

/// Apple transaction ids as submitted in `transaction_id`: the decimal text of an unsigned 64-bit integer, as
/// StoreKit 2 declares them (`Transaction.id: UInt64`; StoreKit 1's `transactionIdentifier` and the receipt's
/// `transaction_id` carry the same ids as strings). Anything else (letters, signs, leading zeros, more than 20
/// digits or a value over 18446744073709551615) is no id Apple could know, and is refused before any Apple call:
/// `400 invalid_transaction_id` at the ingest, `malformed_submission` in the verifier.
public enum TransactionIdText {
    /// Digits of the largest UInt64 (18446744073709551615).
    public static let maximumLength = 20

    public static func isValid(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= maximumLength,
            utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return false }
        // "0" itself is the UInt64 zero's text; "01" is no UInt64's.
        guard utf8.count == 1 || utf8.first != UInt8(ascii: "0") else { return false }
        return UInt64(text) != nil
    }
}

/// `appAccountToken` values: UUIDs, compared lower-cased.
public enum AppAccountToken {
    /// The lower-cased UUID, or nil when `text` is not one.
    public static func normalize(_ text: String) -> String? {
        UUID(uuidString: text).map { $0.uuidString.lowercased() }
    }
}
