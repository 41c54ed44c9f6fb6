/// A transaction's `revocationType` (API 1.19). Unknown values are kept as they are.
public struct RevocationType: OpenStringEnum {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public static let refundFull = RevocationType(rawValue: "REFUND_FULL")
    public static let refundProrated = RevocationType(rawValue: "REFUND_PRORATED")
    public static let familyRevoke = RevocationType(rawValue: "FAMILY_REVOKE")
}
