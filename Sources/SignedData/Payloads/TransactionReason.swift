/// A transaction's `transactionReason`. Unknown values are kept as they are.
public struct TransactionReason: RawRepresentable, Sendable, Hashable, Decodable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public var description: String { rawValue }

    public static let purchase = TransactionReason(rawValue: "PURCHASE")
    public static let renewal = TransactionReason(rawValue: "RENEWAL")
}
