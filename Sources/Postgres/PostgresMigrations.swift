/// Versioned schema migrations of one set of tables, with a bookkeeping table of their own: each version applied
/// once, in its own transaction under an advisory lock, so several instances starting at once apply it once. A
/// database that holds a newer version than the build knows is refused (its code may not understand the tables).
public enum PostgresMigrations {
    /// Applies the `migrations` not recorded in `versionsTable` yet, in order. Never edit a released migration: add
    /// the next version.
    /// - Parameters:
    ///   - lockKey: the advisory lock key that serializes the instances (one per set of tables).
    ///   - newerThanBuild: the error's message for a database at version `newest`, above this build's `known`.
    /// - Returns: the versions applied now (empty when the schema was current).
    @discardableResult
    public static func apply(
        _ migrations: [(version: Int64, statements: [String])], on connection: PostgresConnection,
        versionsTable: String, lockKey: Int64, newerThanBuild: (_ newest: Int64, _ known: Int64) -> String
    ) throws(PostgresError) -> [Int64] {
        precondition(versionsTable.allSatisfy { $0.isLetter || $0 == "_" }, "a table name, not SQL")
        try connection.transaction { session throws(PostgresError) in
            try session.execute("SELECT pg_advisory_xact_lock($1)", [.int(lockKey)])
            try session.execute(
                """
                CREATE TABLE IF NOT EXISTS \(versionsTable) (
                    version bigint PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
                """)
        }
        var applied: [Int64] = []
        for migration in migrations {
            let ran = try connection.transaction { session throws(PostgresError) -> Bool in
                try session.execute("SELECT pg_advisory_xact_lock($1)", [.int(lockKey)])
                let done = try session.execute(
                    "SELECT 1 FROM \(versionsTable) WHERE version = $1", [.int(migration.version)])
                guard done.rows.isEmpty else { return false }
                for statement in migration.statements { try session.execute(statement) }
                try session.execute("INSERT INTO \(versionsTable) (version) VALUES ($1)", [.int(migration.version)])
                return true
            }
            if ran { applied.append(migration.version) }
        }
        let known = migrations.last?.version ?? 0
        let newest =
            try connection.execute("SELECT max(version) AS newest FROM \(versionsTable)").rows.first?
            .optionalInt64("newest") ?? 0
        guard newest <= known else {
            throw PostgresError(sqlState: nil, message: newerThanBuild(newest, known), isConnectionBroken: false)
        }
        return applied
    }
}

/// A set of tables migrated by `PostgresMigrations` (the ledger's, receipt-reconcile's): what each one declares, and
/// the one way both are migrated and versioned.
public protocol VersionedSchema {
    /// Every version, in order. Never edit a released migration: add the next version.
    static var migrations: [(version: Int64, statements: [String])] { get }
    /// The bookkeeping table of this set's versions.
    static var versionsTable: String { get }
    /// The advisory lock key that serializes the instances migrating this set.
    static var migrationLockKey: Int64 { get }
    /// The error's message for a database at version `newest`, above this build's `known`: what to upgrade.
    static func newerThanBuild(_ newest: Int64, _ known: Int64) -> String
}

extension VersionedSchema {
    /// The newest schema version this build knows.
    public static var currentVersion: Int64 { migrations.last?.version ?? 0 }

    /// Applies every migration not applied yet (up to `newest`, when given: tests that build an older schema).
    /// Idempotent; safe with several instances starting at once.
    /// - Returns: the versions applied now (empty when the schema was current).
    /// - Throws: `PostgresError`, also when the database holds a newer version than this build knows.
    @discardableResult
    public static func migrate(_ connection: PostgresConnection, upTo newest: Int64? = nil) throws(PostgresError)
        -> [Int64]
    {
        try PostgresMigrations.apply(
            migrations.filter { $0.version <= (newest ?? .max) }, on: connection,
            versionsTable: versionsTable, lockKey: migrationLockKey, newerThanBuild: newerThanBuild)
    }
}
