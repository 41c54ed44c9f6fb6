/// A Server Notification V2 `notificationType`. Unknown values are kept as they are.
public struct NotificationType: OpenStringEnum {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public static let oneTimeCharge = NotificationType(rawValue: "ONE_TIME_CHARGE")
    public static let subscribed = NotificationType(rawValue: "SUBSCRIBED")
    public static let didRenew = NotificationType(rawValue: "DID_RENEW")
    public static let offerRedeemed = NotificationType(rawValue: "OFFER_REDEEMED")
    public static let didChangeRenewalPref = NotificationType(rawValue: "DID_CHANGE_RENEWAL_PREF")
    public static let didChangeRenewalStatus = NotificationType(rawValue: "DID_CHANGE_RENEWAL_STATUS")
    public static let didFailToRenew = NotificationType(rawValue: "DID_FAIL_TO_RENEW")
    public static let gracePeriodExpired = NotificationType(rawValue: "GRACE_PERIOD_EXPIRED")
    public static let expired = NotificationType(rawValue: "EXPIRED")
    public static let priceIncrease = NotificationType(rawValue: "PRICE_INCREASE")
    public static let refund = NotificationType(rawValue: "REFUND")
    public static let refundDeclined = NotificationType(rawValue: "REFUND_DECLINED")
    public static let refundReversed = NotificationType(rawValue: "REFUND_REVERSED")
    public static let revoke = NotificationType(rawValue: "REVOKE")
    public static let consumptionRequest = NotificationType(rawValue: "CONSUMPTION_REQUEST")
    public static let renewalExtended = NotificationType(rawValue: "RENEWAL_EXTENDED")
    public static let renewalExtension = NotificationType(rawValue: "RENEWAL_EXTENSION")
    public static let test = NotificationType(rawValue: "TEST")
    public static let externalPurchaseToken = NotificationType(rawValue: "EXTERNAL_PURCHASE_TOKEN")
    public static let rescindConsent = NotificationType(rawValue: "RESCIND_CONSENT")
    public static let metadataUpdate = NotificationType(rawValue: "METADATA_UPDATE")
    public static let migration = NotificationType(rawValue: "MIGRATION")
    public static let priceChange = NotificationType(rawValue: "PRICE_CHANGE")
}
