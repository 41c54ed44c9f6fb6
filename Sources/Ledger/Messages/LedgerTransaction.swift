import LedgerRules
import ReceiptModel
import ServiceSupport

/// A result's or event's transaction as the ledger reads it: ReceiptModel's strict reading
/// (`VerifiedTransactionJSON.Members`, its members read through this value; tolerant: members the ledger does not
/// need may be absent or added, `is_upgraded`, `price`, `currency`, `transaction_reason` are read when present; a
/// member it needs that has the wrong type makes the whole message unreadable, dead-lettered, never guessed), with the
/// purchase key derived.
@dynamicMemberLookup
struct LedgerTransaction: Sendable, Equatable {
    /// The transaction as written (its `creditKey` is `writtenCreditKey`).
    let written: VerifiedTransactionJSON.Members
    /// The purchase's identity as the ledger derives it from the environment and the ids (the contract's purchase
    /// identity rule), whatever key the message was written with: results still on the topic with the
    /// pre-2026-12 key (`apple:<env>:<transaction_id>`) are the same purchase as new ones.
    var creditKey: String
    var environment: PurchaseEnvironment = .production
    /// `product_type`: a value the ledger does not know (a newer producer's) is unknown, like null, and never
    /// guessed (Apple's field rules for a refund request's answer depend on it).
    var productKind: ProductKind?
    /// In its canonical form (`AppAccountToken.canonical`: lower-cased, as UUIDs compare), however the producer cased
    /// it: links, parked claims and declarations hold that form, so one token is one owner.
    let appAccountToken: String?

    /// The transaction as read; `creditKey` is the written one until `derivePurchaseKey`.
    init(_ read: VerifiedTransactionJSON.Members) {
        written = read
        creditKey = read.creditKey
        productKind = read.productType.flatMap(ProductKind.init(rawValue:))
        appAccountToken = read.appAccountToken.map(AppAccountToken.canonical)
    }

    subscript<Value>(dynamicMember member: KeyPath<VerifiedTransactionJSON.Members, Value>) -> Value {
        written[keyPath: member]
    }

    /// The `credit_key` as the message carried it.
    var writtenCreditKey: String { written.creditKey }

    /// Sets `creditKey` to the purchase identity of this transaction in `environment` (the message's; where the
    /// message names none, the environment of the key it was written with).
    /// - Throws: `UnreadableMessage` when neither tells the environment, or the transaction has no id.
    mutating func derivePurchaseKey(environment named: String?) throws(UnreadableMessage) {
        let environment: AppStoreEnvironment
        if let named {
            guard let known = AppStoreEnvironment(rawValue: named) else {
                throw UnreadableMessage("environment '\(named.prefix(40))' is neither Production nor Sandbox")
            }
            environment = known
        } else if let fromKey = AppStoreEnvironment.allCases.first(where: {
            writtenCreditKey.hasPrefix("apple:\($0.rawValue.lowercased()):")
        }) {
            environment = fromKey
        } else {
            throw UnreadableMessage("the message names no environment and its credit_key none either")
        }
        guard let transactionId = written.transactionId.flatMap({ $0.isEmpty ? nil : $0 }) else {
            throw UnreadableMessage("transaction.transaction_id is missing")
        }
        self.environment = environment == .sandbox ? .sandbox : .production
        creditKey = PurchaseIdentity.creditKey(
            environment: environment, transactionId: transactionId, originalTransactionId: written.originalTransactionId,
            webOrderLineItemId: written.webOrderLineItemId)
    }

    /// The message carried another key than the one derived (a pre-2026-12 key, or a producer's own): counted.
    var keyWasRederived: Bool { creditKey != writtenCreditKey }

    /// Apple's `in_app_ownership_type`: `FAMILY_SHARED` is someone else's payment.
    var ownership: Ownership { written.inAppOwnershipType == "FAMILY_SHARED" ? .familyShared : .purchased }

    /// A subscription period (its key is the period's): what upgrades compare.
    var isPeriod: Bool { PurchaseKey.isPeriod(creditKey) }

    /// The `credit` object as a shape the rules know: `{"item": string, "amount": positive integer}` exactly, or
    /// `{"entitlement": string}` optionally with `"period": string` (descriptive: the expiry is Apple's
    /// `expires_date_ms`); null is `.nothing`; anything else is `.unknown` (never guessed).
    var creditShape: CreditShape { Self.shape(of: written.credit) }

    static func shape(of credit: JSONValue?) -> CreditShape {
        guard let credit, credit != .null else { return .nothing }
        guard case .object(let members) = credit else { return .unknown(description: describe(credit)) }
        if members.count == 2, case .string(let item)? = members["item"], !item.isEmpty,
            (try? IdentifierText.check(item, "credit.item")) != nil,
            case .integer(let amount)? = members["amount"], amount > 0
        {
            return .grant(.item(name: item, amount: amount))
        }
        if case .string(let entitlement)? = members["entitlement"], !entitlement.isEmpty,
            (try? IdentifierText.check(entitlement, "credit.entitlement")) != nil
        {
            let others = members.filter { $0.key != "entitlement" }
            if others.isEmpty { return .grant(.entitlement(name: entitlement)) }
            if others.count == 1, case .string? = others["period"] { return .grant(.entitlement(name: entitlement)) }
        }
        return .unknown(description: describe(credit))
    }

    private static func describe(_ value: JSONValue) -> String {
        guard let bytes = try? MessageCoding.encode(value) else { return "unencodable" }
        let text = String(decoding: bytes, as: UTF8.self)
        return text.count > 200 ? String(text.prefix(200)) + "..." : text
    }
}

/// What a purchase key says about itself (the ledger derives every key, so its shape is known).
enum PurchaseKey {
    /// `apple:<env>:period:<id>`: a subscription period.
    static func isPeriod(_ key: String) -> Bool {
        for environment in ["apple:production:period:", "apple:sandbox:period:"] where key.hasPrefix(environment) {
            return true
        }
        return false
    }
}
