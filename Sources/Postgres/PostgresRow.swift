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

/// A result's column names (libpq's `PQfname`, in order) and where each stands: built once per result and shared
/// by its rows, so that a row is read by name (`row.string("user_id")`) and a reordered SELECT list cannot hand a
/// value to the wrong field.
public struct PostgresColumns: Sendable, Equatable {
    /// One reference for all the rows of a result (a row copies one pointer, not three collections).
    private final class Index: Sendable {
        let names: [String]
        let positions: [String: Int]
        /// Names two or more columns share (`SELECT a.id, b.id`): reading one by name is an error, not a guess.
        let repeated: Set<String>

        init(_ names: [String]) {
            self.names = names
            var positions: [String: Int] = [:]
            var repeated: Set<String> = []
            positions.reserveCapacity(names.count)
            for (position, name) in names.enumerated() {
                if positions.updateValue(position, forKey: name) != nil { repeated.insert(name) }
            }
            self.positions = positions
            self.repeated = repeated
        }
    }

    private let index: Index

    public var names: [String] { index.names }

    public init(_ names: [String]) {
        index = Index(names)
    }

    /// The position of the column `name`; a name the result does not have, or has twice, is an error naming it.
    public func position(of name: String) throws(PostgresError) -> Int {
        guard let position = index.positions[name] else {
            throw PostgresError(
                sqlState: nil,
                message: "no column \"\(name)\" in the result (its columns: \(names.joined(separator: ", ")))",
                isConnectionBroken: false)
        }
        guard !index.repeated.contains(name) else {
            throw PostgresError(
                sqlState: nil, message: "column \"\(name)\" stands more than once in the result (give it an alias)",
                isConnectionBroken: false)
        }
        return position
    }

    public static func == (lhs: PostgresColumns, rhs: PostgresColumns) -> Bool {
        lhs.index === rhs.index || lhs.names == rhs.names
    }
}

/// One row: each column's text, nil for SQL NULL, and the result's column names. Read it by name
/// (`row.int64("amount")`): a name the result lacks is a `PostgresError` naming it. The positional accessors
/// (`row.int64(2)`) remain for rows read in bulk: the ledger's store finds each column's position by name once per
/// result (`columns.position(of:)`) and reads every row at it. The typed accessors fail with `PostgresError` when a
/// value does not read as the type asked for (a schema mismatch, not bad input).
public struct PostgresRow: Sendable, Equatable {
    public let values: [String?]
    public let columns: PostgresColumns

    public init(values: [String?], columns: PostgresColumns = PostgresColumns([])) {
        self.values = values
        self.columns = columns
    }

    // MARK: By name

    public func isNull(_ name: String) throws(PostgresError) -> Bool { values[try columns.position(of: name)] == nil }

    public func string(_ name: String) throws(PostgresError) -> String { try read(name, string(at:_:)) }

    public func optionalString(_ name: String) throws(PostgresError) -> String? {
        values[try columns.position(of: name)]
    }

    public func int64(_ name: String) throws(PostgresError) -> Int64 { try read(name, int64(at:_:)) }

    public func optionalInt64(_ name: String) throws(PostgresError) -> Int64? { try readOptional(name, int64(at:_:)) }

    public func bool(_ name: String) throws(PostgresError) -> Bool { try read(name, bool(at:_:)) }

    @_spi(Testing) public func optionalBool(_ name: String) throws(PostgresError) -> Bool? { try readOptional(name, bool(at:_:)) }

    /// A `bytea` column (text format `\x` followed by hex digits).
    public func bytes(_ name: String) throws(PostgresError) -> [UInt8] { try read(name, bytes(at:_:)) }

    public func optionalBytes(_ name: String) throws(PostgresError) -> [UInt8]? {
        try readOptional(name, bytes(at:_:))
    }

    private func read<Value>(_ name: String, _ reader: (Int, String) throws(PostgresError) -> Value)
        throws(PostgresError) -> Value
    {
        try reader(try columns.position(of: name), "column \"\(name)\"")
    }

    /// nil for SQL NULL, else what `reader` reads.
    private func readOptional<Value>(_ name: String, _ reader: (Int, String) throws(PostgresError) -> Value)
        throws(PostgresError) -> Value?
    {
        let position = try columns.position(of: name)
        guard values[position] != nil else { return nil }
        return try reader(position, "column \"\(name)\"")
    }

    // MARK: By position

    public func isNull(_ column: Int) -> Bool { values[column] == nil }

    public func string(_ column: Int) throws(PostgresError) -> String { try string(at: column, "column \(column)") }

    public func optionalString(_ column: Int) -> String? { values[column] }

    public func int64(_ column: Int) throws(PostgresError) -> Int64 { try int64(at: column, "column \(column)") }

    public func optionalInt64(_ column: Int) throws(PostgresError) -> Int64? {
        guard values[column] != nil else { return nil }
        return try int64(column)
    }

    public func bool(_ column: Int) throws(PostgresError) -> Bool { try bool(at: column, "column \(column)") }

    /// A `bytea` column (text format `\x` followed by hex digits).
    public func bytes(_ column: Int) throws(PostgresError) -> [UInt8] { try bytes(at: column, "column \(column)") }

    /// A `bigint[]` column without NULL elements (text format `{1,-2,3}`): many numbers in one value, where a row
    /// per number costs the server a row to send and the client a row to copy out.
    public func int64Array(_ column: Int) throws(PostgresError) -> [Int64] {
        try int64Array(at: column, "column \(column)")
    }

    // MARK: Reading a value (`label` names the column in errors)

    private func string(at column: Int, _ label: String) throws(PostgresError) -> String {
        guard let value = values[column] else { throw Self.mismatch(label, "text", nil) }
        return value
    }

    private func int64(at column: Int, _ label: String) throws(PostgresError) -> Int64 {
        guard let text = values[column], let value = Int64(text) else {
            throw Self.mismatch(label, "bigint", values[column])
        }
        return value
    }

    private func bool(at column: Int, _ label: String) throws(PostgresError) -> Bool {
        switch values[column] {
        case "t": return true
        case "f": return false
        default: throw Self.mismatch(label, "boolean", values[column])
        }
    }

    private func bytes(at column: Int, _ label: String) throws(PostgresError) -> [UInt8] {
        guard let text = values[column], text.hasPrefix("\\x") else { throw Self.mismatch(label, "bytea", nil) }
        let digits = Array(text.utf8.dropFirst(2))
        guard digits.count % 2 == 0 else { throw Self.mismatch(label, "bytea", nil) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = Self.hexValue(digits[index]), let low = Self.hexValue(digits[index + 1]) else {
                throw Self.mismatch(label, "bytea", nil)
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private func int64Array(at column: Int, _ label: String) throws(PostgresError) -> [Int64] {
        guard let text = values[column] else { throw Self.mismatch(label, "bigint[]", nil) }
        let utf8 = text.utf8
        guard utf8.first == UInt8(ascii: "{"), utf8.last == UInt8(ascii: "}"), utf8.count >= 2 else {
            throw Self.mismatch(label, "bigint[]", text)
        }
        guard utf8.count > 2 else { return [] }
        var numbers: [Int64] = []
        numbers.reserveCapacity(utf8.count / 2)
        // Each element: an optional minus and at least one digit, accumulated negatively (Int64.min has no
        // positive counterpart), then a comma or the closing brace.
        var negative = false, accumulated: Int64 = 0, digits = 0
        // The elements between the braces, and the closing brace once: a brace inside is refused.
        for (offset, byte) in utf8.dropFirst().enumerated() {
            let isLast = offset == utf8.count - 2
            switch byte {
            case UInt8(ascii: "-") where digits == 0 && !negative:
                negative = true
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                let (times10, overflow) = accumulated.multipliedReportingOverflow(by: 10)
                let (next, underflow) = times10.subtractingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
                guard !overflow, !underflow else { throw Self.mismatch(label, "bigint[]", text) }
                accumulated = next
                digits += 1
            case UInt8(ascii: ",") where !isLast, UInt8(ascii: "}") where isLast:
                guard digits > 0 else { throw Self.mismatch(label, "bigint[]", text) }
                if negative {
                    numbers.append(accumulated)
                } else {
                    guard accumulated != .min else { throw Self.mismatch(label, "bigint[]", text) }
                    numbers.append(-accumulated)
                }
                negative = false
                accumulated = 0
                digits = 0
            default:
                throw Self.mismatch(label, "bigint[]", text)
            }
        }
        return numbers
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func mismatch(_ label: String, _ type: String, _ value: String?) -> PostgresError {
        PostgresError(
            sqlState: nil, message: "\(label) is not a \(type) (\(value == nil ? "null" : "other text"))",
            isConnectionBroken: false)
    }
}
