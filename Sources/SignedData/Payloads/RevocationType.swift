/// A transaction's `revocationType` (API 1.19). Unknown values are kept as they are.
public struct RevocationType: RawRepresentable, Sendable, Hashable, Decodable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public var description: String { rawValue }

    public static let refundFull = RevocationType(rawValue: "REFUND_FULL")
    public static let refundProrated = RevocationType(rawValue: "REFUND_PRORATED")
    public static let familyRevoke = RevocationType(rawValue: "FAMILY_REVOKE")
}
