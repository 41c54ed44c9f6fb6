/// One purchase, one `credit_key` (the contract's *Purchase identity*), whatever Apple calls it and however often it
/// is seen: the key a crediting service dedupes money on.
///
/// Apple mints a new `transaction_id` for every restore on another device and for every renewal, so the transaction
/// id is not the purchase. The purchase id is:
/// - an auto-renewable subscription's billing period: its `web_order_line_item_id` (one per period, the same on every
///   device and after a restore) -> `apple:<environment>:period:<web_order_line_item_id>`;
/// - anything else: its `original_transaction_id` (a non-consumable is bought once, however many restore
///   transactions StoreKit mints; for a consumable or a non-renewing subscription Apple's original id is the
///   transaction's own id) -> `apple:<environment>:<original_transaction_id>`.
///
/// Apple writes a web order line item id only on auto-renewable subscription periods (verifyReceipt's
/// `web_order_line_item_id`, a signed transaction's `webOrderLineItemId`), so its presence is what makes a period:
/// the key is computed from the transaction's own ids alone, never from a product type or the catalog, so it is the
/// same from every source, does not move when the catalog changes, and a crediting service can recompute it from
/// any stored result or event. The two kinds of id never share a namespace (`period:` is not a digit). A web order
/// line item id that is empty or all zeros (seen in old sandbox receipts) is no id: such an entry falls back to its
/// original transaction id, which can only merge periods (never pay one twice). Without an original transaction id
/// the transaction's own id is the purchase.
public enum PurchaseIdentity {
    /// The namespace of a subscription period's key.
    public static let periodNamespace = "period"

    /// `apple:<environment lower-cased>:period:<web_order_line_item_id>` or
    /// `apple:<environment lower-cased>:<original_transaction_id>`.
    public static func creditKey(
        environment: AppStoreEnvironment, transactionId: String, originalTransactionId: String?,
        webOrderLineItemId: String?
    ) -> String {
        let prefix = "apple:\(environment.rawValue.lowercased()):"
        if let period = usableId(webOrderLineItemId) { return prefix + periodNamespace + ":" + period }
        return prefix + (usableId(originalTransactionId) ?? transactionId)
    }

    /// `id` when it is an id: not empty and not all zeros.
    static func usableId(_ id: String?) -> String? {
        guard let id, !id.isEmpty, id.utf8.contains(where: { $0 != UInt8(ascii: "0") }) else { return nil }
        return id
    }
}
