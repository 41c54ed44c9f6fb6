import Foundation
import ReceiptModel

/// The body of `POST /v1/receipts`, validated and normalized: contract fields, or the aliases existing iOS clients
/// send (`receipt`, `orderNo`, `transactionId`, `sandbox`).
///
/// Exactly one proof: `receipt_data` (alias `receipt`), `signed_transaction`, `transaction_id` or
/// `signed_app_transaction` (a StoreKit 2 app transaction, checked like a signed transaction). A StoreKit 2
/// signed transaction (a compact JWS) sent as `receipt_data` is taken as `signed_transaction`. Normalization: base64
/// without whitespace or line breaks; ids given as JSON integers become their decimal text; empty optional strings
/// count as absent; `expected_app_account_token` lower-cased. Unknown fields are ignored. What `submission(...)`
/// makes of a parsed request is exactly what `Submission.decodeValidated(from:)` accepts.
public struct SubmissionRequest: Sendable, Equatable {
    public var submissionId: String?
    /// The normalized proof.
    public var proof: PurchaseProof
    public var orderId: String?
    public var userId: String?
    public var expectedTransactionId: String?
    public var expectedProductId: String?
    /// The lower-cased UUID the app set as `appAccountToken`.
    public var expectedAppAccountToken: String?
    /// The iOS clients' `sandbox` flag, read as the environment the client believes in: `"0"`/`0` mean sandbox and
    /// `"1"`/`1` production (the seed client's convention), `true`/`"true"` sandbox and `false`/`"false"`
    /// production. A hint only, never forwarded: the verifier asks production first and follows Apple's answer
    /// (21007 to the sandbox), the result's environment is what Apple's data says, and `SANDBOX_POLICY` decides
    /// whether sandbox purchases pass.
    public var environmentHint: AppStoreEnvironment?

    /// Longest accepted value of the optional id fields (`order_id`, `user_id`, expected ids).
    public static let maximumFieldLength = Submission.maximumFieldLength

    public init(
        submissionId: String? = nil, proof: PurchaseProof, orderId: String? = nil, userId: String? = nil,
        expectedTransactionId: String? = nil, expectedProductId: String? = nil,
        expectedAppAccountToken: String? = nil, environmentHint: AppStoreEnvironment? = nil
    ) {
        self.submissionId = submissionId
        self.proof = proof
        self.orderId = orderId
        self.userId = userId
        self.expectedTransactionId = expectedTransactionId
        self.expectedProductId = expectedProductId
        self.expectedAppAccountToken = expectedAppAccountToken
        self.environmentHint = environmentHint
    }

    /// A request with a base64 app receipt (already normalized).
    public init(
        submissionId: String? = nil, receiptData: String, orderId: String? = nil, userId: String? = nil,
        expectedTransactionId: String? = nil, expectedProductId: String? = nil
    ) {
        self.init(
            submissionId: submissionId, proof: .receipt(receiptData), orderId: orderId, userId: userId,
            expectedTransactionId: expectedTransactionId, expectedProductId: expectedProductId)
    }

    /// The app receipt, when the proof is one.
    public var receiptData: String? {
        if case .receipt(let receipt) = proof { return receipt }
        return nil
    }

    /// Parses and validates a request body.
    ///
    /// Read by the lean `JSONParser` when `Submission.leanMembers(_:)` can (about a tenth of Foundation's work),
    /// else by `parseWithFoundation(_:)`: the same rules over either reading, and the same answer for every body
    /// (`LeanSubmissionRequestTests`, the `fuzz-http-submission` target's oracle).
    /// - Throws: `APIError` (400) naming the field and the problem.
    @inline(never)  // A frame of its own: bench/ingest-callgrind.sh attributes the parse to it (once per POST).
    public static func parse(_ body: [UInt8]) throws(APIError) -> SubmissionRequest {
        guard let members = Submission.leanMembers(body) else { return try parseWithFoundation(body) }
        return try request { Submission.FieldValue(lean: members[$0]) }
    }

    /// `parse(_:)` with Foundation's `JSONSerialization` as the reader, whatever the body: the path for everything
    /// `Submission.leanMembers(_:)` leaves to Foundation, and the oracle the lean reading is checked against.
    static func parseWithFoundation(_ body: [UInt8]) throws(APIError) -> SubmissionRequest {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(body), options: [])
        } catch {
            throw .invalidJSON()
        }
        guard let object = parsed as? [String: Any] else { throw .notAnObject() }
        return try request { Submission.FieldValue(foundation: object[$0]) }
    }

    /// A body's fields by name (absent or null: `.absent`), from whichever parser read it.
    typealias Fields = (String) -> Submission.FieldValue

    /// The rules, over a body's fields.
    private static func request(_ read: Fields) throws(APIError) -> SubmissionRequest {
        let proof = try proof(read)
        var token: String?
        if let raw = try field(read, "expected_app_account_token", alias: nil, allowNumbers: false) {
            guard let normalized = AppAccountToken.normalize(raw) else {
                throw .invalidField(
                    "expected_app_account_token", "must be a UUID (the appAccountToken the app set at purchase)")
            }
            token = normalized
        }
        return SubmissionRequest(
            submissionId: try field(read, "submission_id", alias: nil),
            proof: proof,
            orderId: try field(read, "order_id", alias: "orderNo"),
            userId: try field(read, "user_id", alias: nil),
            expectedTransactionId: try expectedTransactionId(read),
            expectedProductId: try field(read, "expected_product_id", alias: nil),
            expectedAppAccountToken: token,
            environmentHint: try environmentHint(read("sandbox")))
    }

    /// The submission message for this request.
    /// - Parameter clientId: the caller's key name (named keys), echoed in the result.
    public func submission(id: String, clientId: String? = nil, submittedAtMs: Int64) -> Submission {
        Submission(
            submissionId: id, proof: proof, clientId: clientId, orderId: orderId, userId: userId,
            expectedTransactionId: expectedTransactionId, expectedProductId: expectedProductId,
            expectedAppAccountToken: expectedAppAccountToken, submittedAtMs: submittedAtMs)
    }

    // MARK: - Fields

    /// Exactly one of the proofs, normalized.
    private static func proof(_ read: Fields) throws(APIError) -> PurchaseProof {
        let receipt = try field(read, "receipt_data", alias: "receipt", allowNumbers: false, limited: false)
        let signed = try field(read, "signed_transaction", alias: nil, allowNumbers: false, limited: false)
        let transactionId = try field(read, "transaction_id", alias: nil)
        let appTransaction = try field(
            read, "signed_app_transaction", alias: nil, allowNumbers: false, limited: false)
        let given = [receipt, signed, transactionId, appTransaction].compactMap { $0 }.count
        guard given == 1 else {
            throw given == 0 ? .missingProof() : .multipleProofs()
        }
        if let receipt {
            // A JWS starts with its JSON header (`eyJ`); only then is the whitespace-free copy worth making.
            if receipt.utf8.lazy.filter({ !isWhitespace($0) }).starts(with: "eyJ".utf8) {
                let compact = String(decoding: receipt.utf8.filter { !isWhitespace($0) }, as: UTF8.self)
                if SignedTransactionText.looksLikeJWS(compact) {
                    return .signedTransaction(try signedTransaction(compact, sentAs: "receipt_data"))
                }
            }
            do {
                return .receipt(try ReceiptData.normalize(receipt))
            } catch {
                switch error {
                case .empty: throw .missingProof()
                case .storeKit2Transaction, .notBase64, .tooLarge: throw .invalidReceipt(error.description)
                }
            }
        }
        if let signed {
            return .signedTransaction(try signedTransaction(signed, sentAs: nil))
        }
        if let appTransaction {
            do {
                return .signedAppTransaction(try SignedTransactionText.normalize(appTransaction))
            } catch {
                throw .invalidSignedAppTransaction(error.message(for: .signedAppTransaction))
            }
        }
        guard let transactionId, TransactionIdText.isValid(transactionId) else {
            throw .invalidTransactionId()
        }
        return .transactionId(transactionId)
    }

    private static func signedTransaction(_ text: String, sentAs field: String?) throws(APIError) -> String {
        do {
            return try SignedTransactionText.normalize(text)
        } catch {
            let prefix = field.map { "\($0) looks like a StoreKit 2 signed transaction (JWS), but " } ?? ""
            throw .invalidSignedTransaction(prefix + error.description)
        }
    }

    /// The `sandbox` hint: strings "0"/"1"/"true"/"false", numbers 0/1, booleans; absent or null: nil.
    private static func environmentHint(_ value: Submission.FieldValue) throws(APIError) -> AppStoreEnvironment? {
        let problem = "must be \"0\" (sandbox), \"1\" (production), 0, 1, true or false"
        switch value {
        case .absent:
            return nil
        case .boolean(let bool):
            return bool ? .sandbox : .production
        case .number(let integer):
            switch integer {
            case 0?: return .sandbox
            case 1?: return .production
            default: throw .invalidField("sandbox", problem)
            }
        case .string(let string):
            switch string.trimmingCharacters(in: .whitespaces).lowercased() {
            case "0", "true": return .sandbox
            case "1", "false": return .production
            case "": return nil
            default: throw .invalidField("sandbox", problem)
            }
        case .other:
            throw .invalidField("sandbox", problem)
        }
    }

    /// `expected_transaction_id`, or the iOS clients' `transactionId`. Those clients send the placeholder `"--"` when
    /// StoreKit gave them no transaction id (`transaction.transactionIdentifier ?? "--"`, kept in their lost-order
    /// store and resent later): that means "no expectation", not a transaction to look for, which Apple would never
    /// find (`transaction_not_found` would refuse a paying customer).
    private static func expectedTransactionId(_ read: Fields) throws(APIError) -> String? {
        let contract = try stringValue(
            read("expected_transaction_id"), name: "expected_transaction_id", allowNumbers: true, limited: true)
        var alias = try stringValue(read("transactionId"), name: "transactionId", allowNumbers: true, limited: true)
        if alias == iOSClientNoTransactionPlaceholder { alias = nil }
        if let contract, let alias, contract != alias {
            throw .conflictingFields("expected_transaction_id", "transactionId")
        }
        return contract ?? alias
    }

    /// What the iOS clients send as `transactionId` when they have none.
    static let iOSClientNoTransactionPlaceholder = "--"

    /// The value of `name` or its alias (equal values may be given under both), as a string.
    private static func field(
        _ read: Fields, _ name: String, alias: String?, allowNumbers: Bool = true, limited: Bool = true
    ) throws(APIError) -> String? {
        let primary = try stringValue(read(name), name: name, allowNumbers: allowNumbers, limited: limited)
        guard let alias else { return primary }
        let secondary = try stringValue(read(alias), name: alias, allowNumbers: allowNumbers, limited: limited)
        if let primary, let secondary, primary != secondary { throw .conflictingFields(name, alias) }
        return primary ?? secondary
    }

    private static func stringValue(
        _ value: Submission.FieldValue, name: String, allowNumbers: Bool, limited: Bool
    ) throws(APIError) -> String? {
        let text: String
        switch value {
        case .absent:
            return nil
        case .string(let string):
            text = string
        case .number(let integer) where allowNumbers:
            guard let integer else { throw .invalidField(name, "must be a string or an integer") }
            text = String(integer)
        case .number, .boolean, .other:
            throw .invalidField(name, allowNumbers ? "must be a string or an integer" : "must be a string")
        }
        if text.isEmpty { return nil }
        if limited, text.utf8.count > maximumFieldLength {
            throw .invalidField(name, "is longer than \(maximumFieldLength) bytes")
        }
        // Identifiers (the limited fields; the proofs are checked by their own rules, and base64 may hold line
        // breaks): a control character is refused, never stored truncated (`IdentifierText`).
        if limited, let problem = IdentifierText.problem(field: name, text) {
            throw .invalidIdentifier(problem)
        }
        return text
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }
}
