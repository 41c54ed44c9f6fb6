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
