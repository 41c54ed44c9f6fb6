/// A failure reported by libpq or the server: the server's SQLSTATE when it sent one, its message, and whether the
/// connection is unusable now (the caller reconnects, then retries).
public struct PostgresError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The server's code (`23505`, `40001`, ...), nil when the failure never reached the server (connect, socket).
    public let sqlState: SQLState?
    public let message: String
    /// True when the connection is broken (server gone, socket closed): reconnect before the next statement.
    public let isConnectionBroken: Bool

    public init(sqlState: SQLState?, message: String, isConnectionBroken: Bool) {
        self.sqlState = sqlState
        self.message = message
        self.isConnectionBroken = isConnectionBroken
    }

    public var description: String {
        let state = sqlState.map { " (SQLSTATE \($0.rawValue))" } ?? ""
        return message + state + (isConnectionBroken ? " [connection broken]" : "")
    }

    /// A unique constraint refused a row (a concurrent writer inserted it first).
    public var isUniqueViolation: Bool { sqlState == .uniqueViolation }

    /// A table the statement names does not exist (the schema is not there yet at a first start).
    public var isUndefinedTable: Bool { sqlState == .undefinedTable }

    /// Class 40 (serialization failure, deadlock): the transaction can be retried as it is.
    public var isTransactionRollback: Bool { sqlState?.errorClass == .transactionRollback }

    /// Class 22 (data exception: a value the statement cannot take): retrying the same values fails again.
    public var isDataException: Bool { sqlState?.errorClass == .dataException }

    /// Class 23 (integrity constraint violation: a unique, foreign key, check or not-null constraint refused a row).
    /// Unlike a data exception it may be a concurrent writer's row committed first, which a retry reads.
    public var isIntegrityConstraintViolation: Bool { sqlState?.errorClass == .integrityConstraintViolation }
}

/// A SQLSTATE: five characters, the first two its class (PostgreSQL's "Appendix A. PostgreSQL Error Codes"). The
/// codes and classes this project acts on are named here, so no other module compares raw strings; any other code
/// the server sends is kept as it came (`rawValue`, shown in `PostgresError.description`).
public struct SQLState: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// `23505` unique_violation.
    public static let uniqueViolation = SQLState(rawValue: "23505")
    /// `42P01` undefined_table.
    public static let undefinedTable = SQLState(rawValue: "42P01")
    /// `40001` serialization_failure (also what the ledger raises for a read it cannot decide on: applied again).
    public static let serializationFailure = SQLState(rawValue: "40001")
    /// `22003` numeric_value_out_of_range (a data exception: the ledger's wallet raises it for a balance past 64 bits).
    public static let numericValueOutOfRange = SQLState(rawValue: "22003")

    /// The class of a SQLSTATE: its first two characters.
    public struct Class: RawRepresentable, Hashable, Sendable {
        public let rawValue: String

        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// Class 22, data exception.
        public static let dataException = Class(rawValue: "22")
        /// Class 23, integrity constraint violation.
        public static let integrityConstraintViolation = Class(rawValue: "23")
        /// Class 40, transaction rollback (serialization failure, deadlock detected).
        public static let transactionRollback = Class(rawValue: "40")
    }

    /// This code's class.
    public var errorClass: Class { Class(rawValue: String(rawValue.prefix(2))) }

    public var description: String { rawValue }
}
