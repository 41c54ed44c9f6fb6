import ReceiptModel
import ServiceSupport

/// The kinds of proof a submission may carry, by their contract field names.
public enum ProofKind: String, Sendable, Hashable, CaseIterable {
    case receiptData = "receipt_data"
    case signedTransaction = "signed_transaction"
    case transactionId = "transaction_id"
    /// A StoreKit 2 app transaction (app ownership; nothing to credit).
    case signedAppTransaction = "signed_app_transaction"

    /// The effective kind of a parsed (normalized) proof: what the verifier will check. A StoreKit 2 signed
    /// transaction sent as `receipt_data` was already made a `signed_transaction` by `SubmissionRequest`, and
    /// counts as one.
    public init(_ proof: PurchaseProof) {
        switch proof {
        case .receipt: self = .receiptData
        case .signedTransaction: self = .signedTransaction
        case .transactionId: self = .transactionId
        case .signedAppTransaction: self = .signedAppTransaction
        }
    }
}

/// `INGEST_KEY_PROOFS`: the proof kinds each API key may submit.
///
/// By default (issue 24, 2026-12) a key may submit app receipts, signed transactions and app transactions
/// (`defaultKinds`: what a device holds, signed by Apple), and a bare
/// `transaction_id` only when granted: anyone who learns a transaction id (it is on the customer's e-mail receipt,
/// in logs, in support tickets) could otherwise claim the purchase first with a key shipped inside an app. Grant it to
/// server-to-server keys by name (`backend:receipt_data+signed_transaction+transaction_id`). The name `*` sets the
/// kinds of every key not listed by name, unnamed keys included (`*:receipt_data+signed_transaction+transaction_id`
/// is the behaviour before 2026-12). With no keys at all (`INGEST_API_KEYS` empty: no authentication, logged as a
/// warning) there is no key to grant anything to, and every kind is accepted, as every caller is.
///
/// Entry syntax: `name:kind+kind...` (`app:receipt_data+signed_transaction`), entries separated by commas. The name
/// is one of `INGEST_API_KEYS`' names, so every key under it (a rotation) shares the limit. The kind is the effective
/// one (`ProofKind.init(_:)`): a signed transaction sent as `receipt_data` needs `signed_transaction`.
public struct KeyProofLimits: Sendable, Equatable {
    /// What a key may submit without an entry of its own: receipts, signed transactions and app transactions, no bare
    /// transaction id.
    public static let defaultKinds: Set<ProofKind> = [.receiptData, .signedTransaction, .signedAppTransaction]
    /// Every kind: what anyone may submit without authentication (made once, not per submission).
    private static let everyKind = Set(ProofKind.allCases)
    /// The entry name that sets the kinds of every key not listed by name (unnamed keys included). Never a key
    /// name: names are `[A-Za-z0-9._-]`.
    public static let everyOtherKey = "*"

    /// Allowed kinds by key name.
    public private(set) var allowedByName: [String: Set<ProofKind>]
    /// The kinds of every key not in `allowedByName`, and of unnamed keys (`*`; `defaultKinds` unless set).
    public private(set) var unlisted: Set<ProofKind>

    public init(_ allowedByName: [String: Set<ProofKind>] = [:], unlisted: Set<ProofKind> = KeyProofLimits.defaultKinds) {
        self.allowedByName = allowedByName
        self.unlisted = unlisted
    }

    /// Nothing configured: every key has `defaultKinds`.
    public var isEmpty: Bool { allowedByName.isEmpty && unlisted == Self.defaultKinds }

    /// The kinds `caller` may submit. `authenticationEnabled` is false when `INGEST_API_KEYS` is empty: then every
    /// caller is anonymous and may submit every kind (there are no keys to grant anything to).
    public func allowedKinds(for caller: Caller, authenticationEnabled: Bool) -> Set<ProofKind> {
        guard authenticationEnabled else { return Self.everyKind }
        guard case .client(let name) = caller, let listed = allowedByName[name] else { return unlisted }
        return listed
    }

    /// Whether `caller` may submit a proof of `kind` (see `allowedKinds(for:authenticationEnabled:)`).
    public func allows(_ kind: ProofKind, for caller: Caller, authenticationEnabled: Bool) -> Bool {
        allowedKinds(for: caller, authenticationEnabled: authenticationEnabled).contains(kind)
    }

    /// Parses the entries of `INGEST_KEY_PROOFS` (already split at commas, blanks dropped) against the keys of
    /// `INGEST_API_KEYS`.
    /// - Throws: `ConfigurationError` naming the entry by position and what is wrong (an entry without `:`, a name
    ///   no key of `INGEST_API_KEYS` has, a name listed twice, no kind or an unknown one, any entry while
    ///   `INGEST_API_KEYS` is empty).
    public static func parseList(
        _ entries: [String], keys: [APIKey], variable: String = "INGEST_KEY_PROOFS"
    ) throws(ConfigurationError) -> KeyProofLimits {
        let names = Set(keys.compactMap(\.name))
        let kinds = ProofKind.allCases.map(\.rawValue).joined(separator: ", ")
        if !entries.isEmpty, keys.isEmpty {
            throw ConfigurationError(
                variable: variable,
                problem: "is set but INGEST_API_KEYS is empty: without keys there is no authentication and every "
                    + "proof kind is accepted; set INGEST_API_KEYS (named keys) to limit them")
        }
        var allowed: [String: Set<ProofKind>] = [:]
        var unlisted: Set<ProofKind>?
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
                        + "can be granted by name: name it there as name:key, and list the name here, or use "
                        + "\(everyOtherKey) for every key not listed)")
            }
            let isEveryOther = name == everyOtherKey
            guard isEveryOther || names.contains(name) else {
                throw ConfigurationError(
                    variable: variable,
                    problem: "\(position): '\(name.prefix(APIKey.maximumNameLength))' is not the name of a key in "
                        + "INGEST_API_KEYS (name keys there, name:key, or use \(everyOtherKey) for every key not listed)")
            }
            guard isEveryOther ? unlisted == nil : allowed[name] == nil else {
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
            if isEveryOther { unlisted = set } else { allowed[name] = set }
        }
        return KeyProofLimits(allowed, unlisted: unlisted ?? defaultKinds)
    }

    /// The 403 for `caller` submitting a proof of `kind`, or nil when it may.
    func refusal(of kind: ProofKind, for caller: Caller, authenticationEnabled: Bool) -> APIError? {
        let allowed = allowedKinds(for: caller, authenticationEnabled: authenticationEnabled)
        guard !allowed.contains(kind) else { return nil }
        // In contract order: receipt_data, signed_transaction, transaction_id, signed_app_transaction.
        return .proofNotAllowed(kind, allowed: ProofKind.allCases.filter(allowed.contains))
    }
}
