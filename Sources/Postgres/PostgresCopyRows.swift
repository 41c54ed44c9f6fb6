/// Rows for `COPY table (columns) FROM STDIN (FORMAT binary)` (`PostgresSession.copy`), built field by field in
/// PostgreSQL's binary copy format: the server stores them without parsing text or running a query per batch
/// (multi-row heap inserts). Each field must be of its column's type exactly: `text` for text columns, `int64`
/// for bigint, `bool` for boolean (a mismatch is refused by the server as a data exception, nothing is written).
public struct PostgresCopyRows: Sendable {
    private(set) var bytes: [UInt8]
    public private(set) var count = 0

    public init(reservingBytes capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity + 21)
        // Signature, flags (no OIDs), header extension length.
        bytes.append(contentsOf: Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00])
        append(UInt32(0))
        append(UInt32(0))
    }

    /// Starts a row of `fields` fields; the next `fields` calls of `text`, `int64` and `bool` fill it in order.
    public mutating func startRow(fields: Int) {
        count += 1
        append(UInt16(fields))
    }

    public mutating func text(_ value: String?) {
        guard let value else { return null() }
        let utf8 = value.utf8
        append(UInt32(utf8.count))
        bytes.append(contentsOf: utf8)
    }

    public mutating func int64(_ value: Int64?) {
        guard let value else { return null() }
        append(UInt32(8))
        withUnsafeBytes(of: UInt64(bitPattern: value).bigEndian) { bytes.append(contentsOf: $0) }
    }

    public mutating func bool(_ value: Bool?) {
        guard let value else { return null() }
        append(UInt32(1))
        bytes.append(value ? 1 : 0)
    }

    /// What ends the copy data, sent after `bytes`: a field count of -1.
    static let trailer: [UInt8] = [0xFF, 0xFF]

    private mutating func null() { append(UInt32(bitPattern: -1)) }

    private mutating func append(_ value: UInt32) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    private mutating func append(_ value: UInt16) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }
}
