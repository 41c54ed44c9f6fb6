import ReceiptModel
import ServiceSupport

/// What the result index needs of a result message, read with the lean `JSONParser` instead of decoding the whole
/// `VerificationResult` with Foundation's `JSONDecoder` (issue 26), and only the members it needs
/// (`JSONParser.members`: the transactions, most of a result's bytes, are checked and skipped, not built; issue 43):
/// every ingest instance reads every result, so this read bounds how many replicas can run. The client is answered
/// with the message's own bytes, never with what is read here.
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
        guard
            let members = try? JSONParser.members(
                value,
                [
                    .value("submission_id"), .value("outcome"), .kind("transactions"), .value("attempts"),
                    .value("schema_version"), .value("verified_at_ms"), .value("client_id"),
                    .value("submission_fingerprint"),
                ]),
            case .string(let submissionId)? = members[0],
            case .string(let outcomeName)? = members[1], let outcome = Outcome(rawValue: outcomeName),
            case .array? = members[2], case .integer? = members[3], case .integer? = members[4],
            case .integer(let verifiedAtMs)? = members[5],
            let clientId = Self.optionalString(members[6]),
            let fingerprint = Self.optionalString(members[7])
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
