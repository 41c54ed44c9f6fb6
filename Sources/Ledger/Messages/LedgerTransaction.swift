import LedgerRules
import ReceiptModel
import ServiceSupport

/// The members of a result's or event's transaction the ledger reads. Decoded tolerantly: members the ledger does
/// not need may be absent or added (`is_upgraded`, `price`, `currency`, `transaction_reason` are read when present);
/// a member it needs that has the wrong type makes the whole message unreadable (dead-lettered, never guessed).
struct LedgerTransaction: Sendable, Equatable {
    /// The purchase's identity as the ledger derives it from the environment and the ids (the contract's purchase
    /// identity rule), whatever key the message was written with: results still on the topic with the
    /// pre-2026-12 key (`apple:<env>:<transaction_id>`) are the same purchase as new ones.
    var creditKey: String
    /// The `credit_key` as the message carried it.
    var writtenCreditKey: String
    var environment: PurchaseEnvironment = .production
    var webOrderLineItemId: String?
    var inAppOwnershipType: String?
    var purchaseDateMs: Int64?
    var transactionId: String?
    var originalTransactionId: String?
    var productId: String?
    var quantity: Int64?
    var expiresDateMs: Int64?
    /// In its canonical form (`AppAccountToken.canonical`: lower-cased, as UUIDs compare), however the producer cased
    /// it: links, parked claims and declarations hold that form, so one token is one owner.
    var appAccountToken: String?
    var creditable: Bool
    var credit: JSONValue?
    var revocationPercentage: Int64?
    var isUpgraded: Bool?
    var price: Int64?
    var currency: String?
    var transactionReason: String?
    /// Apple's `appTransactionId` (2025): the app download the purchase was made under (`RESCIND_CONSENT`).
    var appTransactionId: String?
    /// `product_type`: a value the ledger does not know (a newer producer's) is unknown, like null, and never
    /// guessed (Apple's field rules for a refund request's answer depend on it).
    var productKind: ProductKind?


    init(_ c: JSONFields) throws(UnreadableMessage) {
        writtenCreditKey = try c.requiredString("credit_key")
        creditKey = writtenCreditKey
        transactionId = try c.string("transaction_id")
        originalTransactionId = try c.string("original_transaction_id")
        productId = try c.string("product_id")
        quantity = try c.int64("quantity")
        expiresDateMs = try c.int64("expires_date_ms")
        appAccountToken = try c.string("app_account_token").map(AppAccountToken.canonical)
        creditable = try c.bool("creditable") ?? false
        credit = c.value("credit")
        revocationPercentage = try c.int64("revocation_percentage")
        isUpgraded = try c.bool("is_upgraded")
        price = try c.int64("price")
        currency = try c.string("currency")
        transactionReason = try c.string("transaction_reason")
        webOrderLineItemId = try c.string("web_order_line_item_id")
        inAppOwnershipType = try c.string("in_app_ownership_type")
        purchaseDateMs = try c.int64("purchase_date_ms")
        appTransactionId = try c.string("app_transaction_id")
        productKind = try c.string("product_type").flatMap(ProductKind.init(rawValue:))
        try Identifier.check(writtenCreditKey, "transaction.credit_key")
        try Identifier.check(transactionId, "transaction.transaction_id")
        try Identifier.check(originalTransactionId, "transaction.original_transaction_id")
        try Identifier.check(webOrderLineItemId, "transaction.web_order_line_item_id")
        try Identifier.check(productId, "transaction.product_id")
        try Identifier.check(appAccountToken, "transaction.app_account_token")
        try Identifier.check(appTransactionId, "transaction.app_transaction_id")
    }

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
        guard let transactionId = transactionId.flatMap({ $0.isEmpty ? nil : $0 }) else {
            throw UnreadableMessage("transaction.transaction_id is missing")
        }
        self.environment = environment == .sandbox ? .sandbox : .production
        creditKey = PurchaseIdentity.creditKey(
            environment: environment, transactionId: transactionId, originalTransactionId: originalTransactionId,
            webOrderLineItemId: webOrderLineItemId)
    }

    /// The message carried another key than the one derived (a pre-2026-12 key, or a producer's own): counted.
    var keyWasRederived: Bool { creditKey != writtenCreditKey }

    /// Apple's `in_app_ownership_type`: `FAMILY_SHARED` is someone else's payment.
    var ownership: Ownership { inAppOwnershipType == "FAMILY_SHARED" ? .familyShared : .purchased }

    /// A subscription period (its key is the period's): what upgrades compare.
    var isPeriod: Bool { PurchaseKey.isPeriod(creditKey) }

    /// The `credit` object as a shape the rules know: `{"item": string, "amount": positive integer}` exactly, or
    /// `{"entitlement": string}` optionally with `"period": string` (descriptive: the expiry is Apple's
    /// `expires_date_ms`); null is `.nothing`; anything else is `.unknown` (never guessed).
    var creditShape: CreditShape { Self.shape(of: credit) }

    static func shape(of credit: JSONValue?) -> CreditShape {
        guard let credit, credit != .null else { return .nothing }
        guard case .object(let members) = credit else { return .unknown(description: describe(credit)) }
        if members.count == 2, case .string(let item)? = members["item"], !item.isEmpty,
            (try? Identifier.check(item, "credit.item")) != nil,
            case .integer(let amount)? = members["amount"], amount > 0
        {
            return .grant(.item(name: item, amount: amount))
        }
        if case .string(let entitlement)? = members["entitlement"], !entitlement.isEmpty,
            (try? Identifier.check(entitlement, "credit.entitlement")) != nil
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
