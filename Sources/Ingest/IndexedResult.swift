import ReceiptModel
import ServiceSupport

/// What the result index needs of a result message, read with the lean `JSONParser` instead of decoding the whole
/// `VerificationResult` with Foundation's `JSONDecoder`: every ingest instance reads every result, so this read
/// bounds how many replicas can run (issue 26). The client is answered with the message's own bytes, never with
/// what is read here.
///
/// Strict about what it reads, as the full decoding is: a JSON object whose `submission_id` is a string, `outcome`
/// one of the contract's outcomes, `transactions` an array, `attempts` and `verified_at_ms` integers, `schema_version`
/// an integer, and `client_id` / `submission_fingerprint` strings or null. It does not look inside the transactions
/// (the index never does). `IndexedResultTests` checks it against `MessageCoding.decode` as the oracle.
struct IndexedResult: Equatable {
    let submissionId: String
    let outcome: Outcome
    let clientId: String?
    let fingerprint: String?
    let verifiedAtMs: Int64

    /// nil when `value` is not a result message.
    init?(_ value: [UInt8]) {
        guard case .object(let members)? = try? JSONParser.parse(value),
            case .string(let submissionId)? = members["submission_id"],
            case .string(let outcomeName)? = members["outcome"], let outcome = Outcome(rawValue: outcomeName),
            case .array? = members["transactions"],
            case .integer? = members["attempts"], case .integer? = members["schema_version"],
            case .integer(let verifiedAtMs)? = members["verified_at_ms"],
            let clientId = Self.optionalString(members["client_id"]),
            let fingerprint = Self.optionalString(members["submission_fingerprint"])
        else { return nil }
        self.submissionId = submissionId
        self.outcome = outcome
        self.clientId = clientId
        self.fingerprint = fingerprint
        self.verifiedAtMs = verifiedAtMs
    }

    /// `.some(nil)` for an absent or null member, `.some(text)` for a string, nil (not a result) for anything else.
    private static func optionalString(_ value: JSONValue?) -> String?? {
        switch value {
        case nil, .null?: .some(nil)
        case .string(let text)?: .some(text)
        default: nil
        }
    }
}
