import Dispatch
import LedgerRules
import Postgres
import ServiceSupport
import Testing
import TestSupport

@testable import Ledger

/// The spend batcher's two lanes: two batches applied at once, each over its own connection; a wallet's next
/// request waits for the batch applying that wallet to commit and decides on what it committed; a wallet locked by
/// another transaction (another instance, a Kafka batch) is read only once that transaction committed; a wallet
/// created after the lock was taken is read as the lock saw it; a drain lets both batches commit. Each step waits
/// for a state PostgreSQL shows (a session waiting for a lock the test holds), never for time.
@Suite struct WalletLanesTests {
    typealias Answers = WalletStoreTests.Answers

    static func spend(_ key: String, user: String = "u1", amount: Int64) -> WalletRequest {
        WalletStoreTests.spendRequest(key, user: user, amount: amount)
    }

    /// Begins a transaction on `connection` that holds `user`'s Idempotency-Key `key` (an uncommitted
    /// `wallet_requests` row): a batch applying that key locks and reads its wallets, writes everything else, and
    /// waits at its last write (the requests with their answers) until the transaction ends, before it commits.
    static func holdKey(_ key: String, user: String, on connection: PostgresConnection) throws {
        try connection.execute("BEGIN")
        try connection.execute(
            """
            INSERT INTO wallet_requests (user_id, idempotency_key, operation, book, item, amount, note, status, body,
                at_ms)
            VALUES ($1, $2, 'spend', 'production', 'gems', 1, NULL, 200, '{}', 0)
            """, [.text(user), .text(key)])
    }

    static func pid(_ connection: PostgresConnection) throws -> Int64 {
        try connection.execute("SELECT pg_backend_pid() AS pid").rows[0].int64("pid")
    }

    /// The sessions waiting for a lock `pid` holds.
    static func waiters(for pid: Int64, in db: LedgerDatabase) -> [Int64] {
        let rows = (try? db.connection.execute(
            "SELECT pid FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))", [.int(pid)]).rows) ?? []
        return rows.compactMap { try? $0.int64("pid") }
    }

    /// Batch 1 (u1's spend of 60) is held at its last write. u1's next spend of 60 stays waiting rather than going to
    /// the free lane; u2's spend, submitted after it, goes there and commits while batch 1 is still open (two batches
    /// in flight at once). Once batch 1 commits, u1's next spend is applied and refused: it read the 40 batch 1 left,
    /// not the 100 before it. Neither of batch 1's answers comes before its commit, and a key waiting or being
    /// applied answers 409 in either case.
    @Test func twoBatchesAreAppliedAtOnceAndAWalletsNextSpendDecidesOnTheFirstsCommit() async throws {
        let db = try LedgerDatabase("wallet_lanes")
        try db.applyResults(WalletStoreTests.purchase("p1"), WalletStoreTests.purchase("p2", user: "u2"))
        let holder = try PostgresConnection(connectionString: db.connectionString)
        defer { holder.close() }
        try Self.holdKey("k1", user: "u1", on: holder)
        let holderPid = try Self.pid(holder)
        let batcher = WalletBatcher(
            databases: WalletStoreTests.lanes(db), metrics: WalletMetrics(registry: MetricsRegistry()),
            logger: WalletStoreTests.logger)
        batcher.start()
        defer { batcher.drain(within: .seconds(5)) }

        let first = Answers()
        batcher.submit(Self.spend("k1", amount: 60)) { first.add($0) }
        #expect(await eventually { Self.waiters(for: holderPid, in: db).count == 1 }, "batch 1 waits at its last write")
        let again = Answers()
        batcher.submit(Self.spend("k1", amount: 60)) { again.add($0) }
        #expect(again.all.map(\.status) == [409] && again.all.first?.body.contains("idempotency_key_in_flight") == true)

        let sameWallet = Answers()
        batcher.submit(Self.spend("k3", amount: 60)) { sameWallet.add($0) }
        let otherWallet = Answers()
        batcher.submit(Self.spend("k4", user: "u2", amount: 10)) { otherWallet.add($0) }
        #expect(await eventually { otherWallet.all.count == 1 }, "the other lane applies u2's spend meanwhile")
        #expect(otherWallet.all.map(\.status) == [200])
        #expect(try db.user("u2").balance("gems") == 90, "committed while batch 1 is open")
        #expect(first.all.isEmpty, "batch 1 is answered only once it committed")
        #expect(sameWallet.all.isEmpty, "u1's next spend waits for batch 1, it was not taken with u2's")
        #expect(try db.user("u1").balance("gems") == 100)
        let waitingAgain = Answers()
        batcher.submit(Self.spend("k3", amount: 60)) { waitingAgain.add($0) }
        #expect(waitingAgain.all.map(\.status) == [409], "a waiting key is in flight too")

        try holder.execute("ROLLBACK")
        #expect(await eventually { first.all.count == 1 && sameWallet.all.count == 1 })
        #expect(first.all.map(\.status) == [200])
        #expect(first.all.first?.json?["balance"] as? Int == 40)
        #expect(sameWallet.all.map(\.status) == [409])
        #expect(sameWallet.all.first?.body.contains("insufficient_balance") == true)
        #expect(try db.user("u1").balance("gems") == 40)
        #expect(try db.count("wallet_requests") == 3)
        try db.expectConsistent()
    }

    /// Another transaction (another instance's batch, or a Kafka batch taking units back) holds u1's wallet with a
    /// spend of 60 written and not committed. The batcher's spend of 60 waits for u1's lock, then reads the lots,
    /// balance and stored requests that transaction committed (each read is a statement after the lock's, with a
    /// snapshot of its own) and is refused: deciding on the 100 read before would overdraw.
    @Test func aSpendWaitingForAnotherTransactionsLockDecidesOnWhatItCommitted() async throws {
        let db = try LedgerDatabase("wallet_lock_wait")
        try db.applyResults(WalletStoreTests.purchase("p1"))
        let other = try PostgresConnection(connectionString: db.connectionString)
        defer { other.close() }
        try other.execute("BEGIN")
        let theirs = try other.withSession { session throws(PostgresError) in
            try WalletBatch.apply([Self.spend("kA", amount: 60)], in: session, nowMs: 10_000)
        }
        #expect(theirs.map(\.status) == [200])
        let otherPid = try Self.pid(other)
        let batcher = WalletBatcher(
            databases: WalletStoreTests.lanes(db), metrics: WalletMetrics(registry: MetricsRegistry()),
            logger: WalletStoreTests.logger)
        batcher.start()
        defer { batcher.drain(within: .seconds(5)) }

        let answers = Answers()
        batcher.submit(Self.spend("kB", amount: 60)) { answers.add($0) }
        #expect(await eventually { Self.waiters(for: otherPid, in: db).count == 1 })
        #expect(answers.all.isEmpty)
        try other.execute("COMMIT")
        #expect(await eventually { answers.all.count == 1 })
        #expect(answers.all.map(\.status) == [409])
        #expect(answers.all.first?.body.contains("insufficient_balance") == true)
        #expect(try db.user("u1").balance("gems") == 40)
        #expect(try db.count("wallet_spends") == 1)
        try db.expectConsistent()
    }

    /// A wallet without a `balances` row has nothing to lock. When the transaction creating it commits between the
    /// lock statement and the reads after it, those reads see its lots: neither they (read without the lock, a
    /// transaction holding it may have changed them) nor an empty wallet (a refund just after the credit would take
    /// nothing back) is a view to decide on, so the read is refused as a serialization failure, which every caller
    /// applies again; applied again, the lock finds the row and the lot is read with it.
    @Test func aWalletCreatedAfterTheLockIsReadAgain() throws {
        let db = try LedgerDatabase("wallet_created_after_lock")
        let reader = try PostgresConnection(connectionString: db.connectionString)
        defer { reader.close() }
        let wallet = WalletKey(user: "u1", book: .production, item: "gems")
        let statements = WalletWork.readStatements([wallet])
        try reader.execute("BEGIN")
        let lock = try reader.withSession { session throws(PostgresError) in try session.pipeline([statements[0]]) }
        try db.applyResults(WalletStoreTests.purchase("p1"))
        let reads = try reader.withSession { session throws(PostgresError) in
            try session.pipeline(Array(statements[1...]))
        }
        try reader.execute("ROLLBACK")
        #expect(lock[0].rows.isEmpty, "no balances row to lock")
        #expect(reads[0].rows.count == 1, "the lot committed in between is read")
        var work = WalletWork()
        #expect {
            try work.cacheRead([wallet], (lock + reads)[...])
        } throws: { error in
            (error as? PostgresError)?.isTransactionRollback == true
        }

        try reader.execute("BEGIN")
        let again = try reader.withSession { session throws(PostgresError) in try session.pipeline(statements) }
        try reader.execute("ROLLBACK")
        var retried = WalletWork()
        try retried.cacheRead([wallet], again[...])
        let lots = retried.wallet(wallet).lots.values
        #expect(lots.count == 1)
        #expect(retried.wallet(wallet).balance > 0)
        #expect(retried.wallet(wallet).balance == lots.first?.amount)
    }

    /// Stopping with both lanes applying a batch (each held at its last write) and a third spend waiting: the waiting
    /// one is answered 503 at once, both batches commit and are answered, and the drain ends once they did.
    @Test func drainingLetsBothBatchesCommitAndAnswersWhatWaits503() async throws {
        let db = try LedgerDatabase("wallet_lanes_drain")
        try db.applyResults(
            WalletStoreTests.purchase("p1"), WalletStoreTests.purchase("p2", user: "u2"),
            WalletStoreTests.purchase("p3", user: "u3"))
        let holders = try (0..<2).map { _ in try PostgresConnection(connectionString: db.connectionString) }
        defer { holders.forEach { $0.close() } }
        try Self.holdKey("k1", user: "u1", on: holders[0])
        try Self.holdKey("k2", user: "u2", on: holders[1])
        let holderPids = try holders.map(Self.pid)
        let batcher = WalletBatcher(
            databases: WalletStoreTests.lanes(db), metrics: WalletMetrics(registry: MetricsRegistry()),
            logger: WalletStoreTests.logger)
        batcher.start()

        let applied = Answers()
        batcher.submit(Self.spend("k1", amount: 10)) { applied.add($0) }
        #expect(await eventually { Self.waiters(for: holderPids[0], in: db).count == 1 })
        batcher.submit(Self.spend("k2", user: "u2", amount: 10)) { applied.add($0) }
        #expect(await eventually { Self.waiters(for: holderPids[1], in: db).count == 1 })
        let waiting = Answers()
        batcher.submit(Self.spend("k3", user: "u3", amount: 10)) { waiting.add($0) }

        let drained = Locked<Bool?>(nil)
        DispatchQueue.global().async {
            let ended = batcher.drain(within: .seconds(30))
            drained.withLock { $0 = ended }
        }
        #expect(await eventually { waiting.all.count == 1 })
        #expect(waiting.all.first?.body.contains("shutting_down") == true)
        #expect(waiting.all.map(\.status) == [503])
        #expect(applied.all.isEmpty && drained.withLock { $0 } == nil, "both batches are still being applied")
        for holder in holders { try holder.execute("ROLLBACK") }
        #expect(await eventually { drained.withLock { $0 } != nil })
        #expect(drained.withLock { $0 } == true)
        #expect(applied.all.map(\.status) == [200, 200])
        #expect(try db.user("u1").balance("gems") == 90)
        #expect(try db.user("u2").balance("gems") == 90)
        #expect(try db.user("u3").balance("gems") == 100)
        let late = Answers()
        batcher.submit(Self.spend("k4", user: "u3", amount: 10)) { late.add($0) }
        #expect(late.all.map(\.status) == [503])
        try db.expectConsistent()
    }
}
