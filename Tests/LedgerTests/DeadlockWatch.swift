import Dispatch
import Postgres
import ServiceSupport

/// What the deadlock tests watch in PostgreSQL while they stage a deadlock: who waits for whom, and how many deadlocks
/// the server counted; and the rival's statement run on a thread of its own (it waits).
struct DeadlockWatch {
    /// The connection the watch reads on (never part of the staged locks).
    let observer: PostgresConnection

    static func pid(_ connection: PostgresConnection) throws -> Int64 {
        try connection.execute("SELECT pg_backend_pid() AS pid").rows[0].int64("pid")
    }

    /// The sessions `pid` waits for (`pg_blocking_pids`).
    func blockers(of pid: Int64) -> Set<Int64> {
        let rows = (try? observer.execute("SELECT unnest(pg_blocking_pids($1::int)) AS blocker", [.int(pid)]).rows) ?? []
        return Set(rows.compactMap { try? $0.int64("blocker") })
    }

    /// The sessions that wait for `pid`, other than `excluded` (the rival): the ledger's batches.
    func waiters(for pid: Int64, other excluded: Int64) -> [Int64] {
        let rows = (try? observer.execute(
            "SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid)) AND pid <> $2::int",
            [.int(pid), .int(excluded)]).rows) ?? []
        return rows.compactMap { try? $0.int64("pid") }
    }

    /// The deadlocks the server counted in this database (its statistics arrive within seconds); -1 unread.
    func deadlocks() -> Int64 {
        (try? observer.execute(
            "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").rows[0].int64("deadlocks"))
            ?? -1
    }

    /// Runs `sql` on `connection` on a thread of its own (it waits for a lock); its outcome once it returned.
    static func inBackground(_ connection: PostgresConnection, _ sql: String, _ parameters: [PostgresValue] = [])
        -> Locked<Result<Void, PostgresError>?>
    {
        let outcome = Locked<Result<Void, PostgresError>?>(nil)
        DispatchQueue.global().async {
            let result = Result<Void, PostgresError> { () throws(PostgresError) in
                _ = try connection.execute(sql, parameters)
            }
            outcome.withLock { $0 = result }
        }
        return outcome
    }
}
