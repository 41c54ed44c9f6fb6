/// What kind of in-app product a purchase is: the messages' `product_type` (CONTRACT.md), Apple's `type` of the
/// signed transaction. Apple's field rules for a refund request's answer depend on it (`ConsumptionRules.Body`).
public enum ProductKind: String, Sendable, CaseIterable {
    case consumable
    case nonConsumable = "non_consumable"
    case autoRenewable = "auto_renewable"
    case nonRenewing = "non_renewing"

    /// The kind the ledger goes by, most reliable first: the one the message at hand names (a `CONSUMPTION_REQUEST`'s
    /// transaction, as Apple signed it), else the one recorded on the purchase, else what its key tells: only an
    /// auto-renewable subscription has a `web_order_line_item_id`, so a subscription period's key
    /// (`apple:<env>:period:<id>`) is an auto-renewable's. Nothing else is inferred (an item grant can be a
    /// consumable's or a non-consumable's): nil, unknown.
    public static func resolved(named: ProductKind?, recorded: ProductKind?, isSubscriptionPeriod: Bool) -> ProductKind? {
        named ?? recorded ?? (isSubscriptionPeriod ? .autoRenewable : nil)
    }
}
