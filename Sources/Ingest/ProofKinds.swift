import ReceiptModel
import ServiceSupport

/// The three kinds of proof a submission may carry, by their contract field names.
public enum ProofKind: String, Sendable, Hashable, CaseIterable {
    case receiptData = "receipt_data"
    case signedTransaction = "signed_transaction"
    case transactionId = "transaction_id"

    /// The effective kind of a parsed (normalized) proof: what the verifier will check. A StoreKit 2 signed
    /// transaction sent as `receipt_data` was already made a `signed_transaction` by `SubmissionRequest`, and
    /// counts as one.
    public init(_ proof: PurchaseProof) {
        switch proof {
        case .receipt: self = .receiptData
        case .signedTransaction: self = .signedTransaction
        case .transactionId: self = .transactionId
        }
    }
}

/// `INGEST_KEY_PROOFS`: the proof kinds each listed named key may submit. A key whose name is not listed (and every
/// unnamed key) may submit every kind.
///
/// Entry syntax: `name:kind+kind...` (`app:receipt_data+signed_transaction`), entries separated by commas. The name
/// is one of `INGEST_API_KEYS`' names, so every key under it (a rotation) shares the limit. The kind is the effective
/// one (`ProofKind.init(_:)`): a signed transaction sent as `receipt_data` needs `signed_transaction`.
public struct KeyProofLimits: Sendable, Equatable {
    /// Allowed kinds by key name; names not here are unlimited.
    public private(set) var allowedByName: [String: Set<ProofKind>]

    public init(_ allowedByName: [String: Set<ProofKind>] = [:]) {
        self.allowedByName = allowedByName
    }

    /// No key is limited.
    public var isEmpty: Bool { allowedByName.isEmpty }

    /// The kinds `caller` may submit, or nil when it may submit every kind.
    public func allowedKinds(for caller: Caller) -> Set<ProofKind>? {
        guard case .client(let name) = caller else { return nil }
        return allowedByName[name]
    }

    /// Whether `caller` may submit a proof of `kind`.
    public func allows(_ kind: ProofKind, for caller: Caller) -> Bool {
        allowedKinds(for: caller)?.contains(kind) ?? true
    }

    /// Parses the entries of `INGEST_KEY_PROOFS` (already split at commas, blanks dropped) against the keys of
    /// `INGEST_API_KEYS`.
    /// - Throws: `ConfigurationError` naming the entry by position and what is wrong (an entry without `:`, a name
    ///   no key of `INGEST_API_KEYS` has, a name listed twice, no kind or an unknown one).
    public static func parseList(
        _ entries: [String], keys: [APIKey], variable: String = "INGEST_KEY_PROOFS"
    ) throws(ConfigurationError) -> KeyProofLimits {
        let names = Set(keys.compactMap(\.name))
        let kinds = ProofKind.allCases.map(\.rawValue).joined(separator: ", ")
        var allowed: [String: Set<ProofKind>] = [:]
        for (index, entry) in entries.enumerated() {
            let position = "entry \(index + 1)"
            guard let colon = entry.firstIndex(of: ":") else {
                throw ConfigurationError(
                    variable: variable,
                    problem: "\(position) must be name:kind+kind (e.g. app:receipt_data+signed_transaction)")
            }
            let name = entry[..<colon].trimmingCharacters(in: .whitespaces)
            // A key written where its name belongs is never echoed (errors are logged).
            guard !keys.contains(where: { $0.key == name }) else {
                throw ConfigurationError(
                    variable: variable,
                    problem: "\(position) gives a key of INGEST_API_KEYS where its name belongs (only named keys "
                        + "can be limited: name it there as name:key, and list the name here)")
            }
            guard names.contains(name) else {
                throw ConfigurationError(
                    variable: variable,
                    problem: "\(position): '\(name.prefix(APIKey.maximumNameLength))' is not the name of a key in "
                        + "INGEST_API_KEYS (only named keys can be limited: name them there, name:key)")
            }
            guard allowed[name] == nil else {
                throw ConfigurationError(variable: variable, problem: "\(position): '\(name)' is listed twice")
            }
            var set: Set<ProofKind> = []
            for part in entry[entry.index(after: colon)...].split(separator: "+", omittingEmptySubsequences: false) {
                let text = part.trimmingCharacters(in: .whitespaces)
                guard let kind = ProofKind(rawValue: text) else {
                    throw ConfigurationError(
                        variable: variable,
                        problem: text.isEmpty
                            ? "\(position): '\(name)' needs at least one proof kind, joined with '+' (\(kinds))"
                            : "\(position): '\(text.prefix(40))' is not a proof kind (\(kinds))")
                }
                set.insert(kind)
            }
            allowed[name] = set
        }
        return KeyProofLimits(allowed)
    }

    /// The 403 for `caller` submitting a proof of `kind`, or nil when it may.
    func refusal(of kind: ProofKind, for caller: Caller) -> APIError? {
        guard let allowed = allowedKinds(for: caller), !allowed.contains(kind) else { return nil }
        // In contract order: receipt_data, signed_transaction, transaction_id.
        return .proofNotAllowed(kind, allowed: ProofKind.allCases.filter(allowed.contains))
    }
}
