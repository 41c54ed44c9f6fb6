import CPostgres
import Glibc
import ServiceSupport

/// One libpq connection (`PGconn`), the only Swift code calling libpq. Statements run one at a time under the
/// connection's lock, always through `PQexecParams` with the values as parameters (never spliced into SQL text).
///
/// Lifecycle: `init` connects (blocking, bounded by `connect_timeout`); after a failure whose error says
/// `isConnectionBroken`, `reconnect()` before the next statement; `close()` (or release) ends the connection.
public final class PostgresConnection: Sendable {
    /// The `PGconn *` and its prepared statements; used only under this lock (through a `PostgresSession` that
    /// does not outlive the lock).
    private let handle: Locked<ConnectionHandle?>
    private let connectionString: String

    /// - Parameters:
    ///   - connectionString: a libpq `key=value` string or a `postgresql://` URI.
    ///   - connectTimeoutSeconds: used unless the connection string sets `connect_timeout` itself.
    /// - Throws: `PostgresError` (no SQLSTATE, `isConnectionBroken`) when the server cannot be reached or refuses.
    public init(connectionString: String, connectTimeoutSeconds: Int = 5) throws(PostgresError) {
        self.connectionString = connectionString
        let pointer = try Self.connect(connectionString, connectTimeoutSeconds: connectTimeoutSeconds)
        self.handle = Locked(ConnectionHandle(pointer: SendableOpaquePointer(pointer)))
    }

    deinit {
        close()
    }

    /// Ends the connection. Later statements fail with a broken-connection error.
    public func close() {
        handle.withLock { current in
            if let current { PQfinish(current.pointer.pointer) }
            current = nil
        }
    }

    /// Replaces a broken connection with a new one (same connection string).
    /// - Throws: `PostgresError` when the server still cannot be reached (the connection stays broken).
    @_spi(Testing) public func reconnect() throws(PostgresError) {
        try handle.withLock { (current: inout ConnectionHandle?) throws(PostgresError) in
            if let old = current { PQfinish(old.pointer.pointer) }
            current = nil
            current = ConnectionHandle(
                pointer: SendableOpaquePointer(try Self.connect(connectionString, connectTimeoutSeconds: 5)))
        }
    }

    /// False once libpq saw the connection break (or after `close`).
    public var isUsable: Bool {
        handle.withLock { current in
            guard let current else { return false }
            return PQstatus(current.pointer.pointer) == CONNECTION_OK
        }
    }

    /// Runs `body` with exclusive use of the connection (one statement after another, nothing interleaved).
    public func withSession<T>(_ body: (PostgresSession) throws(PostgresError) -> T) throws(PostgresError) -> T {
        try handle.withLock { (current: inout ConnectionHandle?) throws(PostgresError) -> T in
            guard let current else {
                throw PostgresError(sqlState: nil, message: "the connection is closed", isConnectionBroken: true)
            }
            return try body(PostgresSession(connection: current.pointer.pointer, statements: current.statements))
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
        isolation: IsolationLevel = .readCommitted, _ body: (PostgresSession) throws(PostgresError) -> T
    ) throws(PostgresError) -> T {
        try withSession { session throws(PostgresError) -> T in
            try session.execute("BEGIN ISOLATION LEVEL " + isolation.rawValue)
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

/// A connection's `PGconn *` and the statements prepared on it (a new connection starts with none).
struct ConnectionHandle: Sendable {
    let pointer: SendableOpaquePointer
    let statements = PreparedStatements()
}

/// The names of the statements prepared on one connection, by SQL text.
///
/// `@unchecked Sendable`: used only under the lock of the `PostgresConnection` that holds it.
final class PreparedStatements: @unchecked Sendable {
    var bySQL: [String: PreparedStatement] = [:]
}

/// A statement prepared on a connection: its name and its parameters' type OIDs as the server inferred them.
struct PreparedStatement {
    let name: String
    let parameterTypes: [UInt32]
}

/// Exclusive use of a connection for the duration of `PostgresConnection.withSession` or `transaction`; do not keep
/// it beyond the closure it was given to.
public struct PostgresSession {
    let connection: OpaquePointer
    let statements: PreparedStatements

    /// Runs one statement with `parameters` bound to `$1`, `$2`, ... (text format; `.bytes` and the arrays of
    /// `BinaryArray`'s types in binary format). A statement with parameters is prepared once per connection (by its
    /// text) and executed by name after that.
    /// - Throws: `PostgresError` with the server's SQLSTATE, and `isConnectionBroken` when the connection is gone.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresResult {
        let result: OpaquePointer?
        if parameters.isEmpty {
            result = PQexecParams(connection, sql, 0, nil, nil, nil, nil, 0)
        } else {
            let statement = try prepared(sql, parameterCount: parameters.count)
            let bound = BoundParameters(parameters, types: statement.parameterTypes)
            result = bound.withPointers { pointers in
                PQexecPrepared(
                    connection, statement.name, Int32(parameters.count), pointers, bound.lengths, bound.formats, 0)
            }
        }
        guard let result else { throw brokenOr("libpq returned no result") }
        defer { PQclear(result) }
        return try check(result)
    }

    /// Sends every statement at once (libpq's pipeline mode: one round trip for all of them, not one each) and
    /// returns their results in order. The first failure is thrown after the pipeline was drained; the statements
    /// after it did not run (inside a transaction, roll it back).
    public func pipeline(_ statements: [(sql: String, parameters: [PostgresValue])]) throws(PostgresError)
        -> [PostgresResult]
    {
        guard !statements.isEmpty else { return [] }
        var prepared: [PreparedStatement] = []
        prepared.reserveCapacity(statements.count)
        for statement in statements {
            prepared.append(try self.prepared(statement.sql, parameterCount: statement.parameters.count))
        }
        guard PQenterPipelineMode(connection) == 1 else { throw brokenOr("cannot enter pipeline mode") }
        defer { PQexitPipelineMode(connection) }
        for (index, statement) in statements.enumerated() {
            let bound = BoundParameters(statement.parameters, types: prepared[index].parameterTypes)
            let sent = bound.withPointers { pointers in
                PQsendQueryPrepared(
                    connection, prepared[index].name, Int32(statement.parameters.count), pointers, bound.lengths,
                    bound.formats, 0)
            }
            guard sent == 1 else { throw brokenOr("cannot send a pipelined statement") }
        }
        guard PQpipelineSync(connection) == 1 else { throw brokenOr("cannot send the pipeline's sync") }
        var results: [PostgresResult] = []
        results.reserveCapacity(statements.count)
        var firstError: PostgresError?
        for _ in statements {
            guard let result = PQgetResult(connection) else { throw brokenOr("the pipeline ended early") }
            if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                results.append(PostgresResult(columns: [], rows: [], affectedRows: 0))
            } else {
                do throws(PostgresError) {
                    results.append(try check(result))
                } catch {
                    if firstError == nil { firstError = error }
                    results.append(PostgresResult(columns: [], rows: [], affectedRows: 0))
                }
            }
            PQclear(result)
            // Each statement's results end with a null.
            while let extra = PQgetResult(connection) { PQclear(extra) }
        }
        while true {
            guard let result = PQgetResult(connection) else { throw brokenOr("the pipeline's sync never came") }
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_PIPELINE_SYNC { break }
        }
        if let firstError { throw firstError }
        return results
    }

    /// Runs `COPY ... FROM STDIN (FORMAT binary)` (`sql`) with `rows`, outside a pipeline: one statement for all of
    /// them.
    /// - Returns: the number of rows copied.
    /// - Throws: `PostgresError` as `execute` does (a unique violation, a field of the wrong type, ...); nothing of
    ///   the copy is kept then (inside a transaction, roll it back).
    @discardableResult
    public func copy(_ sql: String, _ rows: PostgresCopyRows) throws(PostgresError) -> Int {
        guard let started = PQexec(connection, sql) else { throw brokenOr("libpq returned no result") }
        let status = PQresultStatus(started)
        if status != PGRES_COPY_IN {
            defer { PQclear(started) }
            _ = try check(started)
            throw PostgresError(sqlState: nil, message: "not a COPY FROM STDIN: \(sql)", isConnectionBroken: false)
        }
        PQclear(started)
        func send(_ bytes: [UInt8]) -> Bool {
            bytes.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { PQputCopyData(connection, $0.baseAddress, Int32($0.count)) }
            } == 1
        }
        guard send(rows.bytes), send(PostgresCopyRows.trailer), PQputCopyEnd(connection, nil) == 1 else {
            // The connection is still in its COPY state: nothing else can run on it, so it is given up.
            let message = PQerrorMessage(connection).map { String(cString: $0) } ?? ""
            throw PostgresError(
                sqlState: nil, message: "cannot send the copy data: \(message.trimmingTrailingNewlines())",
                isConnectionBroken: true)
        }
        var outcome: Result<Int, PostgresError> = .failure(
            PostgresError(sqlState: nil, message: "the copy ended without a result", isConnectionBroken: false))
        var first = true
        while let result = PQgetResult(connection) {
            defer { PQclear(result) }
            guard first else { continue }
            first = false
            do throws(PostgresError) {
                outcome = .success(try check(result).affectedRows)
            } catch {
                outcome = .failure(error)
            }
        }
        return try outcome.get()
    }

    /// The statement prepared for `sql` on this connection, prepared (and described: its parameters' types) on
    /// first use.
    private func prepared(_ sql: String, parameterCount: Int) throws(PostgresError) -> PreparedStatement {
        if let statement = statements.bySQL[sql] { return statement }
        let name = "s\(statements.bySQL.count + 1)"
        guard let result = PQprepare(connection, name, sql, Int32(parameterCount), nil) else {
            throw brokenOr("libpq returned no result")
        }
        defer { PQclear(result) }
        _ = try check(result)
        guard let description = PQdescribePrepared(connection, name) else { throw brokenOr("libpq returned no result") }
        defer { PQclear(description) }
        _ = try check(description)
        let types = (0..<PQnparams(description)).map { UInt32(PQparamtype(description, $0)) }
        let statement = PreparedStatement(name: name, parameterTypes: types)
        statements.bySQL[sql] = statement
        return statement
    }

    private func check(_ result: OpaquePointer) throws(PostgresError) -> PostgresResult {
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            return Self.read(result)
        default:
            let message = PQresultErrorMessage(result).map { String(cString: $0) } ?? "statement failed"
            let sqlState = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map {
                SQLState(rawValue: String(cString: $0))
            }
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
        let names = PostgresColumns(columns)
        var rows: [PostgresRow] = []
        rows.reserveCapacity(rowCount)
        for row in 0..<rowCount {
            let values: [String?] = (0..<columnCount).map { column in
                PQgetisnull(result, Int32(row), Int32(column)) != 0
                    ? nil : String(cString: PQgetvalue(result, Int32(row), Int32(column)))
            }
            rows.append(PostgresRow(values: values, columns: names))
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

/// Parameters as libpq takes them: one contiguous buffer holding every value back to back, each followed by a NUL
/// (text parameters need it), with their lengths and formats (text, `.bytes` binary).
private struct BoundParameters {
    var buffer: [UInt8] = []
    var starts: [Int?] = []
    var lengths: [Int32] = []
    var formats: [Int32] = []

    /// - Parameter types: the parameters' type OIDs as the server prepared them (empty: unknown); arrays of the
    ///   types `BinaryArray` knows are sent in binary format, other values in text format (`.bytes` in binary).
    init(_ parameters: [PostgresValue], types: [UInt32] = []) {
        for (index, value) in parameters.enumerated() {
            let type = index < types.count ? types[index] : 0
            var binary = false
            let bytes: [UInt8]?
            switch value {
            case .null: bytes = nil
            case .text(let text): bytes = Array(text.utf8)
            case .int(let number): bytes = Array(String(number).utf8)
            case .bool(let flag): bytes = Array((flag ? "t" : "f").utf8)
            case .bytes(let raw):
                bytes = raw
                binary = true
            case .textArray(let elements):
                if let encoded = BinaryArray.encode(elements.lazy.map { Optional($0) }, as: type) {
                    bytes = encoded
                    binary = true
                } else {
                    bytes = PostgresValue.arrayLiteral(elements)
                }
            case .nullableArray(let elements):
                if let encoded = BinaryArray.encode(elements, as: type) {
                    bytes = encoded
                    binary = true
                } else {
                    bytes = PostgresValue.arrayLiteral(elements)
                }
            }
            formats.append(binary ? 1 : 0)
            lengths.append(Int32(clamping: bytes?.count ?? 0))
            if let bytes {
                starts.append(buffer.count)
                buffer.append(contentsOf: bytes)
                buffer.append(0)
            } else {
                starts.append(nil)
            }
        }
        if buffer.isEmpty { buffer.append(0) }
    }

    /// `body` gets one pointer per parameter (nil for SQL NULL), valid for the duration of the call.
    func withPointers<R>(_ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        buffer.withUnsafeBufferPointer { raw in
            raw.withMemoryRebound(to: CChar.self) { chars in
                body(starts.map { start in start.map { chars.baseAddress! + $0 } })
            }
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
