import Foundation

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

    /// The array literal of `.textArray`: `{"a","b"}` with `"` and `\` escaped.
    static func arrayLiteral(_ elements: [String?]) -> String {
        "{" + elements.map { element in
            guard let element else { return "NULL" }
            return "\"" + element.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }.joined(separator: ",") + "}"
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
