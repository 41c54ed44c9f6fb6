import ServiceSupport

/// A transaction as results (`transactions`) and purchase events (`transaction`) carry it, written and read here
/// only, so a member of the contract changes in one place.
///
/// - The writer: the same members, values and key order as `MessageCoding` (sorted keys, absent values as null,
///   slashes unescaped), without `JSONEncoder`'s generic machinery (`VerificationResultJSON` and `PurchaseEventJSON`
///   call it for their transactions).
/// - The strict reader (`read`, the ledger's): the members a crediting service reads, each with the contract's type;
///   absent and null read as nil, other members are read past, a member of another type or an identifier holding a
///   control character (`IdentifierText`) makes the message unreadable, naming where, never its contents.
///
/// `MessageRoundTripTests` hold `read(write(t))` to `Members(t)` and the bytes to `MessageCoding`'s.
public enum VerifiedTransactionJSON {
    /// What the strict reader reads of a transaction, as written: `product_type` is the producer's text (a value
    /// this build does not know is not refused), `credit` any JSON value (null when the message has it null).
    public struct Members: Sendable, Equatable {
        public var creditKey: String
        public var transactionId: String?
        public var originalTransactionId: String?
        public var productId: String?
        public var quantity: Int64?
        public var expiresDateMs: Int64?
        public var appAccountToken: String?
        /// False when absent.
        public var creditable: Bool
        /// nil only when the member is absent.
        public var credit: JSONValue?
        public var revocationPercentage: Int64?
        public var isUpgraded: Bool?
        public var price: Int64?
        public var currency: String?
        public var transactionReason: String?
        public var webOrderLineItemId: String?
        public var inAppOwnershipType: String?
        public var purchaseDateMs: Int64?
        /// Apple's `appTransactionId` (2025): the app download the purchase was made under (`RESCIND_CONSENT`).
        public var appTransactionId: String?
        public var productType: String?

        /// What `read` gives for the bytes `write` writes of `transaction`.
        public init(_ transaction: VerifiedTransaction) {
            creditKey = transaction.creditKey
            transactionId = transaction.transactionId
            originalTransactionId = transaction.originalTransactionId
            productId = transaction.productId
            quantity = Int64(transaction.quantity)
            expiresDateMs = transaction.expiresDateMs
            appAccountToken = transaction.appAccountToken
            creditable = transaction.creditable
            credit = transaction.credit ?? .null
            revocationPercentage = transaction.revocationPercentage.map(Int64.init)
            isUpgraded = transaction.isUpgraded
            price = transaction.price
            currency = transaction.currency
            transactionReason = transaction.transactionReason
            webOrderLineItemId = transaction.webOrderLineItemId
            inAppOwnershipType = transaction.inAppOwnershipType
            purchaseDateMs = transaction.purchaseDateMs
            appTransactionId = transaction.appTransactionId
            productType = transaction.productType?.rawValue
        }

        /// Reads the object `c` (members in this order, the first problem decides the reason).
        init(_ c: JSONFields) throws(UnreadableMessage) {
            creditKey = try c.requiredString("credit_key")
            transactionId = try c.string("transaction_id")
            originalTransactionId = try c.string("original_transaction_id")
            productId = try c.string("product_id")
            quantity = try c.int64("quantity")
            expiresDateMs = try c.int64("expires_date_ms")
            appAccountToken = try c.string("app_account_token")
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
            productType = try c.string("product_type")
            try IdentifierText.check(creditKey, "transaction.credit_key")
            try IdentifierText.check(transactionId, "transaction.transaction_id")
            try IdentifierText.check(originalTransactionId, "transaction.original_transaction_id")
            try IdentifierText.check(webOrderLineItemId, "transaction.web_order_line_item_id")
            try IdentifierText.check(productId, "transaction.product_id")
            try IdentifierText.check(appAccountToken, "transaction.app_account_token")
            try IdentifierText.check(appTransactionId, "transaction.app_transaction_id")
        }
    }

    /// Reads one transaction object of a message (`transactions.0`, `transaction`).
    static func read(_ fields: JSONFields) throws(UnreadableMessage) -> Members {
        try Members(fields)
    }

    /// Writes `transaction` as results' `transactions` and events' `transaction` carry it.
    public static func write(_ transaction: VerifiedTransaction, to out: inout JSONWriter) {
        out.member("app_account_token", first: true)
        out.string(transaction.appAccountToken)
        out.member("app_transaction_id")
        out.string(transaction.appTransactionId)
        out.member("billing_plan_type")
        out.string(transaction.billingPlanType)
        out.member("cancellation_date_ms")
        out.number(transaction.cancellationDateMs)
        out.member("cancellation_reason")
        out.string(transaction.cancellationReason)
        out.member("commitment_info")
        write(transaction.commitmentInfo ?? .null, to: &out)
        out.member("credit")
        write(transaction.credit ?? .null, to: &out)
        out.member("credit_key")
        out.string(transaction.creditKey)
        out.member("creditable")
        out.bool(transaction.creditable)
        out.member("currency")
        out.string(transaction.currency)
        out.member("expires_date_ms")
        out.number(transaction.expiresDateMs)
        out.member("in_app_ownership_type")
        out.string(transaction.inAppOwnershipType)
        out.member("is_trial_period")
        out.bool(transaction.isTrialPeriod)
        out.member("is_upgraded")
        out.bool(transaction.isUpgraded)
        out.member("not_creditable_reason")
        out.string(transaction.notCreditableReason?.rawValue)
        out.member("offer_discount_type")
        out.string(transaction.offerDiscountType)
        out.member("offer_identifier")
        out.string(transaction.offerIdentifier)
        out.member("offer_period")
        out.string(transaction.offerPeriod)
        out.member("offer_type")
        out.number(transaction.offerType)
        out.member("original_transaction_id")
        out.string(transaction.originalTransactionId)
        out.member("price")
        out.number(transaction.price)
        out.member("product_id")
        out.string(transaction.productId)
        out.member("product_type")
        out.string(transaction.productType?.rawValue)
        out.member("purchase_date_ms")
        out.number(transaction.purchaseDateMs)
        out.member("quantity")
        out.number(Int64(transaction.quantity))
        out.member("revocation_percentage")
        out.number(transaction.revocationPercentage.map(Int64.init))
        out.member("revocation_type")
        out.string(transaction.revocationType)
        out.member("storefront")
        out.string(transaction.storefront)
        out.member("storefront_id")
        out.string(transaction.storefrontId)
        out.member("transaction_id")
        out.string(transaction.transactionId)
        out.member("transaction_reason")
        out.string(transaction.transactionReason)
        out.member("web_order_line_item_id")
        out.string(transaction.webOrderLineItemId)
        out.raw("}")
    }

    /// The catalog's opaque `credit`, object keys sorted.
    static func write(_ value: JSONValue, to out: inout JSONWriter) {
        switch value {
        case .null: out.null()
        case .bool(let flag): out.bool(flag)
        case .integer(let number): out.number(number)
        case .number:
            // Fractions are rare in a catalog: JSONEncoder decides their text, as for every other message.
            out.raw((try? MessageCoding.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "null")
        case .string(let text): out.string(text)
        case .array(let elements):
            out.raw("[")
            for (index, element) in elements.enumerated() {
                if index > 0 { out.raw(",") }
                write(element, to: &out)
            }
            out.raw("]")
        case .object(let members):
            out.raw("{")
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out.raw(",") }
                out.string(key)
                out.raw(":")
                write(members[key] ?? .null, to: &out)
            }
            out.raw("}")
        }
    }
}
