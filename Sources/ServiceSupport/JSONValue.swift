/// Any JSON value, kept as it was: the product catalog's opaque `credit` objects travel through results and events
/// unchanged, and the parts of Apple's signed payloads kept loosely (a notification's `summary`, `appData` and
/// `externalPurchaseToken`, a transaction's `commitmentInfo`) are read as it. Whole numbers that fit 64 bits are
/// `.integer`, exactly (transaction ids and millisecond dates lose nothing).
public indirect enum JSONValue: Sendable, Equatable, Hashable, Codable {
    case null
    case bool(Bool)
    /// An integer that fits 64 bits (written back without a fraction).
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = Self.reading(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// A number read as a `Double`: `.integer` when it is whole and exactly an `Int64` (`1234567890123456789.75`
    /// reads as the double 1234567890123456768), so that writing it and reading it back gives the same value and
    /// case. Foundation writes such a double as `1.2345678901234568e+18`, which reads back as the integer
    /// 1234567890123456800: a `.number` would not survive a round trip through a result (found by fuzzing).
    static func reading(_ value: Double) -> JSONValue {
        // -2^63 ... 2^63 (exclusive): exactly the doubles Int64 holds.
        let bound = 9.223_372_036_854_775_808e18
        if value == value.rounded(.towardZero), value >= -bound, value < bound { return .integer(Int64(value)) }
        return .number(value)
    }

    /// The member `key` of an object (nil for other values).
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
