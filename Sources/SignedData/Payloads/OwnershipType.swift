/// A transaction's `inAppOwnershipType`. Unknown values are kept as they are.
public struct OwnershipType: RawRepresentable, Sendable, Hashable, Decodable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public var description: String { rawValue }

    public static let purchased = OwnershipType(rawValue: "PURCHASED")
    public static let familyShared = OwnershipType(rawValue: "FAMILY_SHARED")
}
