import Foundation
import ServiceSupport

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
    ///
    /// Read by the lean `JSONParser` when `leanMembers(_:)` can (about a tenth of Foundation's work), else by
    /// `decodeValidatedWithFoundation(from:)`: the same rules over either reading, and the same answer for every
    /// input (`LeanSubmissionDecodingTests`, the `fuzz-submission-message` target's oracle).
    public static func decodeValidated(from bytes: [UInt8]) throws(MalformedSubmission) -> Submission {
        guard let members = leanMembers(bytes) else { return try decodeValidatedWithFoundation(from: bytes) }
        return try validated(members: members)
    }

    /// `decodeValidated(from:)` with Foundation's `JSONSerialization` as the reader, whatever the input: the path
    /// for everything `leanMembers(_:)` leaves to Foundation, and the oracle the lean reading is checked against.
    static func decodeValidatedWithFoundation(from bytes: [UInt8]) throws(MalformedSubmission) -> Submission {
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
        return try validated { FieldValue(foundation: object[$0]) }
    }

    /// The rules over an object read by `leanMembers(_:)`.
    static func validated(members: [String: JSONValue]) throws(MalformedSubmission) -> Submission {
        try validated { FieldValue(lean: members[$0]) }
    }

    /// This submission, already decoded (structurally, as inside a `RetryRecord`), checked and normalized by the
    /// rules of `decodeValidated(from:)` without being encoded and parsed again: the same value or the same problem
    /// as `decodeValidated(from: MessageCoding.encode(self))`.
    public func validated() throws(MalformedSubmission) -> Submission {
        try Self.validated { field($0) }
    }

    /// The rules, over a submission's fields by contract name (`read` answers each field's JSON value).
    private static func validated(_ read: (String) -> FieldValue) throws(MalformedSubmission) -> Submission {
        // Echoed fields are read leniently first, so that a malformed message still yields a result that names them.
        let submissionId = try? idField(read, "submission_id")
        let orderId = try? idField(read, "order_id")
        let userId = try? idField(read, "user_id")
        let clientId = (try? stringField(read, "client_id")) ?? nil
        func malformed(_ problem: String) -> MalformedSubmission {
            let usableId = submissionId.flatMap { $0 }.flatMap { $0.isEmpty || $0.count > maximumIdLength ? nil : $0 }
            return MalformedSubmission(
                submissionId: usableId, orderId: orderId ?? nil, userId: userId ?? nil, clientId: clientId,
                problem: problem)
        }

        do throws(FieldProblem) {
            guard let version = try integerField(read, "schema_version") else {
                throw FieldProblem("schema_version is missing")
            }
            guard version == Int64(currentSchemaVersion) else {
                throw FieldProblem(
                    "schema_version \(version) is not supported (this verifier reads \(currentSchemaVersion))")
            }
            guard let id = try idField(read, "submission_id"), !id.isEmpty else {
                throw FieldProblem("submission_id is missing or empty")
            }
            guard id.count <= maximumIdLength else {
                throw FieldProblem("submission_id is longer than \(maximumIdLength) characters")
            }
            let proof = try proofField(read)
            let submittedAt = try integerField(read, "submitted_at_ms") ?? 0
            var token: String?
            if let rawToken = try stringField(read, "expected_app_account_token") {
                guard let normalized = AppAccountToken.normalize(rawToken) else {
                    throw FieldProblem("expected_app_account_token is not a UUID")
                }
                token = normalized
            }
            return Submission(
                submissionId: id, proof: proof, clientId: try stringField(read, "client_id"),
                orderId: try idField(read, "order_id"), userId: try idField(read, "user_id"),
                expectedTransactionId: try idField(read, "expected_transaction_id"),
                expectedProductId: try stringField(read, "expected_product_id"),
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
    private static func proofField(_ read: (String) -> FieldValue) throws(FieldProblem) -> PurchaseProof {
        let receipt = try stringField(read, "receipt_data", maximumLength: nil)
        let signed = try stringField(read, "signed_transaction", maximumLength: nil)
        let transactionId = try idField(read, "transaction_id")
        let appTransaction = try stringField(read, "signed_app_transaction", maximumLength: nil)
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

    /// One field as the rules read it: its JSON type and value, from Foundation's `JSONSerialization`, from the
    /// lean `JSONParser` (`leanMembers(_:)`) or from a decoded value. Also the ingest's (`SubmissionRequest`): one
    /// reading of JSON types for both services, whichever parser read the body.
    public enum FieldValue: Sendable, Equatable {
        /// Absent or null.
        case absent
        case string(String)
        /// A JSON number (not a boolean): the integer when it is one exactly (see `JSONNumbers.integer`), else nil.
        case number(Int64?)
        case boolean(Bool)
        /// An array or object.
        case other

        /// A value of an object parsed by `JSONSerialization` (which gives booleans as NSNumbers too).
        public init(foundation value: Any?) {
            switch value {
            case nil, is NSNull: self = .absent
            case let string as String: self = .string(string)
            case let number as NSNumber where JSONNumbers.isBoolean(number): self = .boolean(number.boolValue)
            case let number as NSNumber: self = .number(JSONNumbers.integer(number))
            default: self = .other
            }
        }

        /// A value of an object from `leanMembers(_:)`, read as `init(foundation:)` reads Foundation's value for the
        /// same bytes. Its integers were written plainly and fit Int64: Foundation reads them as that integer
        /// exactly, so `JSONNumbers.integer`'s reading is `readableInteger`'s. A `.number` never comes from
        /// `leanMembers` (it leaves every other number to Foundation, whose NSDecimalNumber readings have corners
        /// not worth copying); it is read here as Foundation reads a double.
        public init(lean value: JSONValue?) {
            switch value {
            case nil, .null?: self = .absent
            case .string(let string)?: self = .string(string)
            case .integer(let integer)?: self = .number(JSONNumbers.readableInteger(integer))
            case .number(let double)?:
                self = .number(double == double.rounded() && abs(double) < 9.0e15 ? Int64(double) : nil)
            case .bool(let bool)?: self = .boolean(bool)
            case .array?, .object?: self = .other
            }
        }

        init(_ string: String?) {
            self = string.map(FieldValue.string) ?? .absent
        }
    }

    /// The members of the JSON object `bytes` as the lean `JSONParser` reads them, when that reading is certainly
    /// Foundation's (through `FieldValue(lean:)` and `FieldValue(foundation:)`); nil leaves `bytes` to Foundation,
    /// which then decides exactly as it always did:
    /// - the parser refuses the bytes: a duplicate member name, nesting deeper than 64, UTF-16 or UTF-32, a BOM, a
    ///   trailing comma, invalid UTF-8, a lone surrogate escape... (Foundation accepts some of these);
    /// - the value is not an object (Foundation refuses a bare scalar without `.fragmentsAllowed`; an array is
    ///   refused by the rules either way, and is rare);
    /// - a number anywhere is not an integer written plainly that fits Int64 (`1.0`, `1e3`, `-0.0`,
    ///   `9223372036854775808`): Foundation reads those as doubles or NSDecimalNumbers, whose integer readings
    ///   differ from the parser's in corners (`0.99999999999999999999` is a decimal with `doubleValue` 1 and
    ///   `int64Value` 0). Submissions carry plain integers, so this costs nothing in practice.
    public static func leanMembers(_ bytes: [UInt8]) -> [String: JSONValue]? {
        guard let parsed = try? JSONParser.parseNotingNumbers(bytes), parsed.onlyPlainIntegers,
            case .object(let members) = parsed.value
        else { return nil }
        return members
    }

    /// The field `name` as `encode(to:)` writes it, read back as JSON would be (only the proof in use is present;
    /// an absent optional is absent).
    private func field(_ name: String) -> FieldValue {
        switch name {
        case "schema_version": .number(JSONNumbers.readableInteger(Int64(schemaVersion)))
        case "submission_id": .string(submissionId)
        case "receipt_data", "signed_transaction", "transaction_id", "signed_app_transaction":
            name == proof.fieldName ? .string(proof.text) : .absent
        case "client_id": FieldValue(clientId)
        case "order_id": FieldValue(orderId)
        case "user_id": FieldValue(userId)
        case "expected_transaction_id": FieldValue(expectedTransactionId)
        case "expected_product_id": FieldValue(expectedProductId)
        case "expected_app_account_token": FieldValue(expectedAppAccountToken)
        case "submitted_at_ms": .number(JSONNumbers.readableInteger(submittedAtMs))
        default: .absent
        }
    }

    /// A string, or a JSON integer written as its decimal digits (ids sometimes arrive as numbers). Absent or null:
    /// nil. Any other type: a problem.
    static func idField(_ read: (String) -> FieldValue, _ name: String) throws(FieldProblem) -> String? {
        switch read(name) {
        case .absent:
            return nil
        case .string(let string):
            guard string.utf8.count <= maximumFieldLength else {
                throw FieldProblem("\(name) is longer than \(maximumFieldLength) bytes")
            }
            if let problem = IdentifierText.problem(field: name, string) { throw FieldProblem(problem) }
            return string.isEmpty ? nil : string
        case .number(let integer):
            guard let integer else { throw FieldProblem("\(name) must be a string or an integer") }
            return String(integer)
        case .boolean, .other:
            throw FieldProblem("\(name) must be a string or an integer")
        }
    }

    static func stringField(
        _ read: (String) -> FieldValue, _ name: String, maximumLength: Int? = maximumFieldLength
    ) throws(FieldProblem) -> String? {
        switch read(name) {
        case .absent:
            return nil
        case .string(let string):
            if let maximumLength, string.utf8.count > maximumLength {
                throw FieldProblem("\(name) is longer than \(maximumLength) bytes")
            }
            // Identifiers only: the proofs (unlimited) tolerate line breaks, and are checked by their own rules.
            if maximumLength != nil, let problem = IdentifierText.problem(field: name, string) {
                throw FieldProblem(problem)
            }
            return string.isEmpty ? nil : string
        case .number, .boolean, .other:
            throw FieldProblem("\(name) must be a string")
        }
    }

    static func integerField(_ read: (String) -> FieldValue, _ name: String) throws(FieldProblem) -> Int64? {
        switch read(name) {
        case .absent:
            return nil
        case .number(let integer):
            guard let integer else { throw FieldProblem("\(name) must be an integer") }
            return integer
        case .string, .boolean, .other:
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

    /// `value` when a JSON number of it would pass `integer(_:)` (within ±9e15), else nil.
    public static func readableInteger(_ value: Int64) -> Int64? {
        abs(Double(value)) < 9.0e15 ? value : nil
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

    /// `text` with its ASCII letters lower-cased and nothing else changed: for a UUID the same as `normalize`
    /// (UUIDs are case-insensitive, RFC 9562 section 4), and defined for any text a producer may have written, so
    /// a token is one value however it was cased. ASCII only, like the ledger's SQL `translate` of stored tokens:
    /// the two agree whatever the database's locale.
    public static func canonical(_ text: String) -> String {
        let upper = UInt8(ascii: "A")...UInt8(ascii: "Z")
        guard text.utf8.contains(where: upper.contains) else { return text }
        return String(decoding: text.utf8.map { upper.contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
    }
}
