import Foundation
import Postgres
import ServiceSupport
import Synchronization

/// A connection to the ledger's database that (re)connects when needed: created on first use, replaced after it
/// broke. `isUp` is what `/readyz` reports: true after a statement succeeded, false after one failed.
final class DatabaseLink: Sendable {
    private let connectionString: String
    private let connection = Locked<PostgresConnection?>(nil)
    private let up = Atomic<Bool>(false)
    private let metrics: LedgerMetrics?
    private let logger: Logger

    init(connectionString: String, metrics: LedgerMetrics?, logger: Logger) {
        self.connectionString = connectionString
        self.metrics = metrics
        self.logger = logger
    }

    var isUp: Bool { up.load(ordering: .relaxed) }

    /// Runs `body` on the connection (connecting first when there is none or it broke).
    func withConnection<T>(_ body: (PostgresConnection) throws(PostgresError) -> T) throws(PostgresError) -> T {
        let current = try usableConnection()
        do {
            let value = try body(current)
            setUp(true)
            return value
        } catch {
            setUp(false)
            if error.isConnectionBroken || !current.isUsable {
                connection.withLock { if $0 === current { $0 = nil } }
            }
            throw error
        }
    }

    /// Creates or migrates the schema, retrying with backoff until it worked (true) or `shouldStop` (false).
    func migrateWithRetry(until shouldStop: @Sendable () -> Bool) -> Bool {
        var backoff = Backoff()
        while !shouldStop() {
            do {
                let applied = try withConnection { connection throws(PostgresError) in try LedgerSchema.migrate(connection) }
                logger.info(
                    "database schema ready",
                    ["version": .int(Int(LedgerSchema.currentVersion)), "migrations_applied": .int(applied.count)])
                return true
            } catch {
                logger.error("cannot prepare the database; retrying", ["error": .string(error.description)])
                backoff.sleep()
            }
        }
        return false
    }

    func close() {
        connection.withLock { current in
            current?.close()
            current = nil
        }
    }

    private func usableConnection() throws(PostgresError) -> PostgresConnection {
        try connection.withLock { (current: inout PostgresConnection?) throws(PostgresError) -> PostgresConnection in
            if let existing = current, existing.isUsable { return existing }
            current = nil
            do throws(PostgresError) {
                let fresh = try PostgresConnection(connectionString: connectionString)
                // Statements are prepared once per connection; a generic plan made while the tables were small
                // (a sequential scan) would stay as they grow: 13 ms more per batch at 30,000 purchases
                // (bench/ledger.sh). Custom plans keep the saved parsing and plan for the table as it is.
                try fresh.execute("SET plan_cache_mode = force_custom_plan")
                current = fresh
                return fresh
            } catch {
                setUp(false)
                throw error
            }
        }
    }

    private func setUp(_ value: Bool) {
        up.store(value, ordering: .relaxed)
        metrics?.databaseUp.set(value ? 1 : 0)
    }
}
