/// A failure reported by libpq or the server: the server's SQLSTATE when it sent one, its message, and whether the
/// connection is unusable now (the caller reconnects, then retries).
public struct PostgresError: Error, CustomStringConvertible, Sendable, Equatable {
    /// Five characters (`23505`, `40001`, ...), nil when the failure never reached the server (connect, socket).
    public let sqlState: String?
    public let message: String
    /// True when the connection is broken (server gone, socket closed): reconnect before the next statement.
    public let isConnectionBroken: Bool

    public init(sqlState: String?, message: String, isConnectionBroken: Bool) {
        self.sqlState = sqlState
        self.message = message
        self.isConnectionBroken = isConnectionBroken
    }

    public var description: String {
        let state = sqlState.map { " (SQLSTATE \($0))" } ?? ""
        return message + state + (isConnectionBroken ? " [connection broken]" : "")
    }

    /// `23505`: a unique constraint refused a row (a concurrent writer inserted it first).
    public var isUniqueViolation: Bool { sqlState == "23505" }

    /// Class 40 (serialization failure, deadlock): the transaction can be retried as it is.
    public var isTransactionRollback: Bool { sqlState?.hasPrefix("40") ?? false }

    /// Class 22 (data exception: a value the statement cannot take): retrying the same values fails again.
    public var isDataException: Bool { sqlState?.hasPrefix("22") ?? false }
}
