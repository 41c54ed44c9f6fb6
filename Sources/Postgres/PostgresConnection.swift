import CPostgres
import Glibc
import ServiceSupport

/// One libpq connection (`PGconn`), the only Swift code calling libpq. Statements run one at a time under the
/// connection's lock, always through `PQexecParams` with the values as parameters (never spliced into SQL text).
///
/// Lifecycle: `init` connects (blocking, bounded by `connect_timeout`); after a failure whose error says
/// `isConnectionBroken`, `reconnect()` before the next statement; `close()` (or release) ends the connection.
public final class PostgresConnection: Sendable {
    /// The `PGconn *`; used only under this lock (through a `PostgresSession` that does not outlive the lock).
    private let handle: Locked<SendableOpaquePointer?>
    private let connectionString: String

    /// - Parameters:
    ///   - connectionString: a libpq `key=value` string or a `postgresql://` URI.
    ///   - connectTimeoutSeconds: used unless the connection string sets `connect_timeout` itself.
    /// - Throws: `PostgresError` (no SQLSTATE, `isConnectionBroken`) when the server cannot be reached or refuses.
    public init(connectionString: String, connectTimeoutSeconds: Int = 5) throws(PostgresError) {
        self.connectionString = connectionString
        let pointer = try Self.connect(connectionString, connectTimeoutSeconds: connectTimeoutSeconds)
        self.handle = Locked(SendableOpaquePointer(pointer))
    }

    deinit {
        close()
    }

    /// Ends the connection. Later statements fail with a broken-connection error.
    public func close() {
        handle.withLock { pointer in
            if let pointer { PQfinish(pointer.pointer) }
            pointer = nil
        }
    }

    /// Replaces a broken connection with a new one (same connection string).
    /// - Throws: `PostgresError` when the server still cannot be reached (the connection stays broken).
    public func reconnect() throws(PostgresError) {
        try handle.withLock { (pointer: inout SendableOpaquePointer?) throws(PostgresError) in
            if let old = pointer { PQfinish(old.pointer) }
            pointer = nil
            pointer = SendableOpaquePointer(try Self.connect(connectionString, connectTimeoutSeconds: 5))
        }
    }

    /// False once libpq saw the connection break (or after `close`).
    public var isUsable: Bool {
        handle.withLock { pointer in
            guard let pointer else { return false }
            return PQstatus(pointer.pointer) == CONNECTION_OK
        }
    }

    /// Runs `body` with exclusive use of the connection (one statement after another, nothing interleaved).
    public func withSession<T>(_ body: (PostgresSession) throws(PostgresError) -> T) throws(PostgresError) -> T {
        try handle.withLock { (pointer: inout SendableOpaquePointer?) throws(PostgresError) -> T in
            guard let pointer else {
                throw PostgresError(sqlState: nil, message: "the connection is closed", isConnectionBroken: true)
            }
            return try body(PostgresSession(connection: pointer.pointer))
        }
    }

    /// One statement on its own (autocommit).
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresResult {
        try withSession { session throws(PostgresError) in try session.execute(sql, parameters) }
    }

    /// Runs `body` inside `BEGIN` ... `COMMIT`; any error rolls back (when the connection still allows it) and is
    /// rethrown. `COMMIT` failing is an error too: nothing of `body` was kept.
    public func transaction<T>(
        isolation: String = "READ COMMITTED", _ body: (PostgresSession) throws(PostgresError) -> T
    ) throws(PostgresError) -> T {
        try withSession { session throws(PostgresError) -> T in
            try session.execute("BEGIN ISOLATION LEVEL " + Self.checkedIsolation(isolation))
            let value: T
            do throws(PostgresError) {
                value = try body(session)
            } catch {
                if !error.isConnectionBroken { _ = try? session.execute("ROLLBACK") }
                throw error
            }
            try session.execute("COMMIT")
            return value
        }
    }

    private static func checkedIsolation(_ level: String) -> String {
        ["READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"].contains(level) ? level : "READ COMMITTED"
    }

    private static func connect(_ connectionString: String, connectTimeoutSeconds: Int) throws(PostgresError)
        -> OpaquePointer
    {
        // Later parameters override earlier ones: the connection string's own settings win over these defaults.
        let keywords = ["connect_timeout", "application_name", "dbname"]
        let values = [String(connectTimeoutSeconds), "receipt-ledger", connectionString]
        let pointer = withCStrings(keywords) { keywordPointers in
            withCStrings(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let pointer else {
            throw PostgresError(sqlState: nil, message: "libpq could not allocate a connection", isConnectionBroken: true)
        }
        guard PQstatus(pointer) == CONNECTION_OK else {
            let message = PQerrorMessage(pointer).map { String(cString: $0) } ?? "cannot connect"
            PQfinish(pointer)
            throw PostgresError(
                sqlState: nil, message: message.trimmingTrailingNewlines(), isConnectionBroken: true)
        }
        // Notices (`CREATE TABLE IF NOT EXISTS` skipping, ...) would go to stderr, where only JSON log lines belong.
        PQsetNoticeProcessor(pointer, { _, _ in }, nil)
        return pointer
    }
}

/// Exclusive use of a connection for the duration of `PostgresConnection.withSession` or `transaction`; do not keep
/// it beyond the closure it was given to.
public struct PostgresSession {
    let connection: OpaquePointer

    /// Runs one statement with `parameters` bound to `$1`, `$2`, ... (text format; `.bytes` in binary format).
    /// - Throws: `PostgresError` with the server's SQLSTATE, and `isConnectionBroken` when the connection is gone.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresResult {
        let texts: [[UInt8]?] = parameters.map { value in
            switch value {
            case .null: nil
            case .text(let text): Array(text.utf8)
            case .int(let number): Array(String(number).utf8)
            case .bool(let flag): Array((flag ? "t" : "f").utf8)
            case .bytes(let bytes): bytes
            }
        }
        let formats: [Int32] = parameters.map { if case .bytes = $0 { 1 } else { 0 } }
        let lengths: [Int32] = texts.map { Int32(clamping: $0?.count ?? 0) }
        let result = withParameterPointers(texts) { pointers in
            PQexecParams(connection, sql, Int32(parameters.count), nil, pointers, lengths, formats, 0)
        }
        guard let result else { throw brokenOr("libpq returned no result") }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            return Self.read(result)
        default:
            let message = PQresultErrorMessage(result).map { String(cString: $0) } ?? "statement failed"
            let sqlState = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            throw PostgresError(
                sqlState: sqlState, message: message.trimmingTrailingNewlines(),
                isConnectionBroken: PQstatus(connection) != CONNECTION_OK)
        }
    }

    private func brokenOr(_ fallback: String) -> PostgresError {
        let message = PQerrorMessage(connection).map { String(cString: $0) } ?? fallback
        return PostgresError(
            sqlState: nil, message: message.isEmpty ? fallback : message.trimmingTrailingNewlines(),
            isConnectionBroken: PQstatus(connection) != CONNECTION_OK)
    }

    private static func read(_ result: OpaquePointer) -> PostgresResult {
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
        var rows: [PostgresRow] = []
        rows.reserveCapacity(rowCount)
        for row in 0..<rowCount {
            let values: [String?] = (0..<columnCount).map { column in
                PQgetisnull(result, Int32(row), Int32(column)) != 0
                    ? nil : String(cString: PQgetvalue(result, Int32(row), Int32(column)))
            }
            rows.append(PostgresRow(values: values))
        }
        let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
        return PostgresResult(columns: columns, rows: rows, affectedRows: affected)
    }
}

/// `body` gets a NUL-terminated C string per element (and a final nil), valid only during the call.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    return body(copies.map { $0.map { UnsafePointer($0) } } + [nil])
}

/// `body` gets one pointer per parameter (nil for SQL NULL) into buffers that live for the duration of the call.
private func withParameterPointers<R>(_ values: [[UInt8]?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    // One contiguous buffer holding every value back to back, each followed by a NUL (text parameters need it).
    var buffer: [UInt8] = []
    var starts: [Int?] = []
    for value in values {
        if let value {
            starts.append(buffer.count)
            buffer.append(contentsOf: value)
            buffer.append(0)
        } else {
            starts.append(nil)
        }
    }
    if buffer.isEmpty { buffer.append(0) }
    return buffer.withUnsafeBufferPointer { raw in
        raw.withMemoryRebound(to: CChar.self) { chars in
            body(starts.map { start in start.map { chars.baseAddress! + $0 } })
        }
    }
}

extension String {
    fileprivate func trimmingTrailingNewlines() -> String {
        var text = self
        while text.last == "\n" || text.last == "\r" { text.removeLast() }
        return text
    }
}
