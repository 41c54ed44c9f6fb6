/// A transaction's `inAppOwnershipType`. Unknown values are kept as they are.
public struct OwnershipType: OpenStringEnum {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public static let purchased = OwnershipType(rawValue: "PURCHASED")
    public static let familyShared = OwnershipType(rawValue: "FAMILY_SHARED")
}
