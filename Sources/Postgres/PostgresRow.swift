/// The rows a statement returned (text format, copied out of libpq: no C memory is held).
public struct PostgresResult: Sendable {
    public let columns: [String]
    public let rows: [PostgresRow]
    /// `PQcmdTuples`: rows inserted, updated or deleted (0 for other statements).
    public let affectedRows: Int

    public init(columns: [String], rows: [PostgresRow], affectedRows: Int) {
        self.columns = columns
        self.rows = rows
        self.affectedRows = affectedRows
    }
}

/// One row: each column's text, nil for SQL NULL. The typed accessors fail with `PostgresError` when a value does
/// not read as the type asked for (a schema mismatch, not bad input).
public struct PostgresRow: Sendable, Equatable {
    public let values: [String?]

    public init(values: [String?]) {
        self.values = values
    }

    public func isNull(_ column: Int) -> Bool { values[column] == nil }

    public func string(_ column: Int) throws(PostgresError) -> String {
        guard let value = values[column] else { throw Self.mismatch(column, "text", nil) }
        return value
    }

    public func optionalString(_ column: Int) -> String? { values[column] }

    public func int64(_ column: Int) throws(PostgresError) -> Int64 {
        guard let text = values[column], let value = Int64(text) else { throw Self.mismatch(column, "bigint", values[column]) }
        return value
    }

    public func optionalInt64(_ column: Int) throws(PostgresError) -> Int64? {
        guard values[column] != nil else { return nil }
        return try int64(column)
    }

    public func bool(_ column: Int) throws(PostgresError) -> Bool {
        switch values[column] {
        case "t": return true
        case "f": return false
        default: throw Self.mismatch(column, "boolean", values[column])
        }
    }

    /// A `bytea` column (text format `\x` followed by hex digits).
    public func bytes(_ column: Int) throws(PostgresError) -> [UInt8] {
        guard let text = values[column], text.hasPrefix("\\x") else { throw Self.mismatch(column, "bytea", nil) }
        let digits = Array(text.utf8.dropFirst(2))
        guard digits.count % 2 == 0 else { throw Self.mismatch(column, "bytea", nil) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = Self.hexValue(digits[index]), let low = Self.hexValue(digits[index + 1]) else {
                throw Self.mismatch(column, "bytea", nil)
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func mismatch(_ column: Int, _ type: String, _ value: String?) -> PostgresError {
        PostgresError(
            sqlState: nil, message: "column \(column) is not a \(type) (\(value == nil ? "null" : "other text"))",
            isConnectionBroken: false)
    }
}
