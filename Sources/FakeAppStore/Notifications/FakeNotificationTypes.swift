/// Every App Store Server Notification V2 type with the subtypes Apple sends with it (nil: no subtype), from §3.3 of
/// the App Store reference: what `fake-appstore send-notification --type` knows how to shape.
public enum FakeNotificationTypes {
    public static let subtypes: [String: [String?]] = [
        "ONE_TIME_CHARGE": [nil],
        "SUBSCRIBED": ["INITIAL_BUY", "RESUBSCRIBE"],
        "DID_RENEW": [nil, "BILLING_RECOVERY"],
        "OFFER_REDEEMED": ["INITIAL_BUY", "RESUBSCRIBE", "UPGRADE", "DOWNGRADE", nil],
        "DID_CHANGE_RENEWAL_PREF": ["UPGRADE", "DOWNGRADE", nil],
        "DID_CHANGE_RENEWAL_STATUS": ["AUTO_RENEW_ENABLED", "AUTO_RENEW_DISABLED"],
        "DID_FAIL_TO_RENEW": ["GRACE_PERIOD", nil],
        "GRACE_PERIOD_EXPIRED": [nil],
        "EXPIRED": ["VOLUNTARY", "BILLING_RETRY", "PRICE_INCREASE", "PRODUCT_NOT_FOR_SALE", nil],
        "PRICE_INCREASE": ["PENDING", "ACCEPTED"],
        "REFUND": [nil],
        "REFUND_DECLINED": [nil],
        "REFUND_REVERSED": [nil],
        "REVOKE": [nil],
        "CONSUMPTION_REQUEST": [nil],
        "RENEWAL_EXTENDED": [nil],
        "RENEWAL_EXTENSION": ["SUMMARY", "FAILURE"],
        "TEST": [nil],
        "EXTERNAL_PURCHASE_TOKEN": ["UNREPORTED", "ACTIVE_TOKEN_REMINDER", "CREATED"],
        "RESCIND_CONSENT": [nil],
        "METADATA_UPDATE": [nil],
        "MIGRATION": [nil],
        "PRICE_CHANGE": [nil],
    ]

    /// Every (type, subtype) pair, sorted by type.
    public static var all: [(type: String, subtype: String?)] {
        subtypes.keys.sorted().flatMap { type in subtypes[type, default: []].map { (type, $0) } }
    }
}
