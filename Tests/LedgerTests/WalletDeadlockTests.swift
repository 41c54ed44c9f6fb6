import Dispatch
import LedgerRules
import Postgres
import ServiceSupport
import Testing
import TestSupport

@testable import Ledger

/// The spend batcher's retry after PostgreSQL breaks a deadlock (SQLSTATE 40P01) by aborting the batch: a real
/// deadlock, made in an order that leaves PostgreSQL no choice of victim, and the batch applied exactly once after.
@Suite struct WalletDeadlockTests {
    typealias F = LedgerFixtures

    /// The batch spends from u1's and u2's wallets; it locks their balances rows in key order (u1, then u2), then
    /// writes u1's lot. Another transaction ("rival") holds that lot and asks for u1's balances row, which the batch
    /// holds: a cycle. PostgreSQL's deadlock check runs once per wait, `deadlock_timeout` after it began, in the
    /// waiting session, and aborts that session. The rival waits with a check an hour away; the batch is kept from
    /// reaching the lot (a third session holds u2's row) until the rival waits, so the batch's wait for the lot is
    /// the one that closes the cycle and its check, a second later, finds it: the batch is the victim, every time.
    @Test func aBatchAbortedByADeadlockIsAppliedAgainExactlyOnce() async throws {
        let db = try LedgerDatabase("wallet_deadlock")
        try db.applyResults(
            WalletStoreTests.purchase("p1"), WalletStoreTests.purchase("p2", user: "u2"),
            WalletStoreTests.purchase("p3", user: "u3"), WalletStoreTests.purchase("p4", user: "u4"))
        let rival = try PostgresConnection(connectionString: db.connectionString)
        defer { rival.close() }
        let gate = try PostgresConnection(connectionString: db.connectionString)
        defer { gate.close() }
        let plug = try PostgresConnection(connectionString: db.connectionString)
        defer { plug.close() }
        let watch = DeadlockWatch(observer: db.connection)
        let rivalPid = try DeadlockWatch.pid(rival)
        let gatePid = try DeadlockWatch.pid(gate)
        let plugPid = try DeadlockWatch.pid(plug)
        /// The sessions that wait for `pid`, other than the rival (the batcher's lanes).
        func waiters(for pid: Int64) -> [Int64] { watch.waiters(for: pid, other: rivalPid) }
        let deadlocksBefore = watch.deadlocks()

        // The rival holds u1's lot; the gate holds u2's wallet. Neither ever checks for a deadlock it is part of.
        try rival.execute("BEGIN")
        try rival.execute("SET LOCAL deadlock_timeout = '1h'")
        try rival.execute(
            // u1's lot has no row yet (schema 12: written when first drawn on): the rival writes it, uncommitted,
            // so the batch's first write of it waits.
            """
            INSERT INTO wallet_lots (user_id, lot_key, book, item, kind, amount, added_at_ms)
            SELECT owner, credit_key, book, grant_name, 'purchase', lot_amount, lot_added_at_ms FROM purchases
            WHERE credit_key = $1
            """, [.text(F.key("p1"))])
        try gate.execute("BEGIN")
        try gate.execute("SET LOCAL deadlock_timeout = '1h'")
        try gate.execute("SELECT 1 FROM balances WHERE user_id = 'u2' FOR UPDATE")

        let metrics = WalletMetrics(registry: MetricsRegistry())
        let batcher = WalletBatcher(
            databases: WalletStoreTests.lanes(db),
            metrics: metrics, logger: WalletStoreTests.logger)
        batcher.start()
        defer { batcher.drain(within: .seconds(5)) }
        // A lane takes what waits when it is free: a spend of u3's wallet and one of u4's, which the plug holds, keep
        // both lanes busy (each spend its own batch: the second came once the first lane waited) while the two
        // spends queue, so whichever lane is free first takes them together as one batch.
        try plug.execute("BEGIN")
        try plug.execute("SELECT 1 FROM balances WHERE user_id IN ('u3', 'u4') FOR UPDATE")
        let plugged = WalletStoreTests.Answers()
        batcher.submit(WalletStoreTests.spendRequest("k0", user: "u3", amount: 10)) { plugged.add($0) }
        #expect(await eventually(timeout: .seconds(20)) { waiters(for: plugPid).count == 1 })
        batcher.submit(WalletStoreTests.spendRequest("k00", user: "u4", amount: 10)) { plugged.add($0) }
        #expect(await eventually(timeout: .seconds(20)) { waiters(for: plugPid).count == 2 })
        let answers = WalletStoreTests.Answers()
        batcher.submit(WalletStoreTests.spendRequest("k1", user: "u1", amount: 30)) { answers.add($0) }
        batcher.submit(WalletStoreTests.spendRequest("k2", user: "u2", amount: 40)) { answers.add($0) }
        try plug.execute("ROLLBACK")
        #expect(await eventually(timeout: .seconds(20)) { plugged.all.count == 2 })
        #expect(plugged.all.map(\.status) == [200, 200])

        // 1. The batch holds u1's wallet and waits for the gate (u2's).
        var batchPid: Int64?
        #expect(await eventually(timeout: .seconds(20)) {
            batchPid = waiters(for: gatePid).first
            return batchPid != nil
        })
        let batch = try #require(batchPid)
        // 2. The rival asks for u1's wallet (on a thread of its own: it waits) and waits for the batch.
        let rivalLocked = DeadlockWatch.inBackground(rival, "SELECT 1 FROM balances WHERE user_id = 'u1' FOR UPDATE")
        #expect(await eventually(timeout: .seconds(20)) { watch.blockers(of: rivalPid).contains(batch) })
        // 3. The gate lets the batch on: it writes u1's lot, waits for the rival, and its deadlock check aborts it.
        try gate.execute("ROLLBACK")
        #expect(await eventually(timeout: .seconds(20)) { rivalLocked.withLock { $0 } != nil })
        let rivalOutcome = try #require(rivalLocked.withLock { $0 })
        if case .failure(let error) = rivalOutcome { Issue.record("the rival is never the victim: \(error)") }
        // The batch is applied again at once, so it may lock u1's row again before the rival, waking, does: then the
        // same cycle closes again and the batch is its victim again, until the rival has the row. Each time is a
        // deadlock, and nothing of an aborted attempt is kept.
        // Once the batch applied again waits for the rival, every abort before it was counted.
        #expect(await eventually(timeout: .seconds(20)) {
            metrics.batchRetries.current >= 1 && !waiters(for: rivalPid).isEmpty
        })
        let retries = metrics.batchRetries.current
        #expect(answers.all.isEmpty, "the batch was aborted and applied again, which waits for the rival now")
        // 4. The rival gives way; the batch applied again commits once.
        try rival.execute("ROLLBACK")
        #expect(await eventually(timeout: .seconds(20)) { answers.all.count == 2 })
        #expect(answers.all.map(\.status) == [200, 200])
        #expect(metrics.batchRetries.current == retries)
        #expect(try db.user("u1").balance("gems") == 70)
        #expect(try db.user("u2").balance("gems") == 60)
        #expect(try db.user("u3").balance("gems") == 90)
        #expect(try db.user("u4").balance("gems") == 90)
        #expect(try db.count("wallet_requests") == 4)
        #expect(try db.count("wallet_spends") == 4)
        // What aborted it was a deadlock each time (the server counts them; its statistics arrive within seconds).
        #expect(await eventually(timeout: .seconds(30)) { watch.deadlocks() == deadlocksBefore + Int64(retries) })
        try db.expectConsistent()
    }
}

extension WalletStoreTests {
    static func spendRequest(_ key: String, user: String, amount: Int64) -> WalletRequest {
        WalletRequest(
            operation: .spend, userId: user, idempotencyKey: key, book: .production, item: "gems", amount: amount, note: nil)
    }
}
