/// A statement parameter. Values always travel as parameters (`$1`, `$2`, ...), never inside the SQL text.
public enum PostgresValue: Sendable, Equatable {
    case null
    case text(String)
    case int(Int64)
    case bool(Bool)
    /// Sent in binary format (for `bytea` columns).
    case bytes([UInt8])
    /// A `text[]` (for `= ANY($1)`), sent as an array literal with every element quoted.
    case textArray([String])
    /// An array whose elements may be NULL (for `unnest` of a nullable column); cast it in the SQL
    /// (`$1::bigint[]`): elements are sent quoted, NULL unquoted.
    case nullableArray([String?])

    /// `.text`, or `.null` for nil.
    public static func optional(_ value: String?) -> PostgresValue { value.map { .text($0) } ?? .null }

    /// The array literal of `.textArray` and `.nullableArray`: `{"a","b",NULL}` with `"` and `\` escaped, built
    /// as bytes (a batch's arrays hold thousands of elements: no per-element string searching).
    static func arrayLiteral(_ elements: [String?]) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        bytes.reserveCapacity(elements.count * 16 + 2)
        for (index, element) in elements.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            guard let element else {
                bytes.append(contentsOf: [UInt8(ascii: "N"), UInt8(ascii: "U"), UInt8(ascii: "L"), UInt8(ascii: "L")])
                continue
            }
            bytes.append(UInt8(ascii: "\""))
            for byte in element.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { bytes.append(UInt8(ascii: "\\")) }
                bytes.append(byte)
            }
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// `.nullableArray` of integers.
    public static func intArray(_ values: [Int64?]) -> PostgresValue { .nullableArray(values.map { $0.map(String.init) }) }

    /// `.int`, or `.null` for nil.
    public static func optional(_ value: Int64?) -> PostgresValue { value.map { .int($0) } ?? .null }
}

extension PostgresValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
}
