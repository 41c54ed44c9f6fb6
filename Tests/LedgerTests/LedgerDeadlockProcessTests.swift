import Dispatch
import Foundation
import Postgres
import ServiceSupport
import Testing
import TestSupport

/// The Kafka worker's retry after PostgreSQL breaks a deadlock (SQLSTATE 40P01) by aborting its batch
/// (`LedgerWorker.applyUntilCommitted`), through the real `receipt-ledger` process: a real deadlock, made in an order
/// that leaves PostgreSQL no choice of victim, and the batch applied exactly once after.
@Suite("receipt-ledger: a Kafka batch aborted by a deadlock", .serialized)
struct LedgerDeadlockProcessTests {
    typealias F = LedgerFixtures
    typealias H = LedgerHarness

    /// A batch locks its partition's `consumer_offsets` row, then the purchases it touches (`FOR UPDATE`), then the
    /// wallets. A refund of p1 is held at p1's purchase row by a "gate"; a "rival" holds u1's wallet (`balances`) and
    /// asks for the events topic's offset rows, the batch's first lock: it waits for the batch. When the gate lets
    /// the batch on, the batch asks for u1's wallet, which closes the cycle. PostgreSQL's deadlock check runs in the
    /// waiting session `deadlock_timeout` after its wait began: the rival's is an hour away, the batch's a second,
    /// so the batch is the victim every time. Its retry then waits for the rival, and commits once it gives way.
    @Test func aBatchAbortedByADeadlockIsAppliedAgainExactlyOnce() async throws {
        let (harness, ledger, directory) = try await WalletProcessTests.start()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await harness.produce(
            H.resultsTopic, key: "u1",
            [
                F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "p1")]),
                F.result(submissionId: "s2", userId: "u2", transactions: [F.transaction(creditKey: "p2")]),
            ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 2 })
        // A refund on the partition the deadlocked one will use, so that its offset row exists (a row the batch
        // inserted would be invisible to the rival, who would then not wait).
        try await harness.produce(
            H.eventsTopic, key: "o", [F.event(eventId: "r0", type: "debit", transaction: F.transaction(creditKey: "p2"))])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 3 })
        #expect(try harness.balances(item: "gems") == ["u1": 100, "u2": 0])

        let observer = try WalletProcessTests.database(harness)
        defer { observer.close() }
        let watch = DeadlockWatch(observer: observer)
        let rival = try WalletProcessTests.database(harness)
        defer { rival.close() }
        let gate = try WalletProcessTests.database(harness)
        defer { gate.close() }
        let rivalPid = try DeadlockWatch.pid(rival)
        let gatePid = try DeadlockWatch.pid(gate)
        func databaseErrors() async -> Double { await ledger.metricSum("ledger_database_errors_total") ?? -1 }
        let deadlocksBefore = watch.deadlocks()
        #expect(await databaseErrors() == 0)

        // The gate holds p1's purchase; the rival holds u1's wallet. Neither ever checks for a deadlock it is in.
        try gate.execute("BEGIN")
        try gate.execute("SET LOCAL deadlock_timeout = '1h'")
        try gate.execute("SELECT 1 FROM purchases WHERE credit_key = $1 FOR UPDATE", [.text(F.key("p1"))])
        try rival.execute("BEGIN")
        try rival.execute("SET LOCAL deadlock_timeout = '1h'")
        try rival.execute("SELECT 1 FROM balances WHERE user_id = 'u1' FOR UPDATE")

        // 1. The refund's batch holds its offset row and waits for the gate.
        try await harness.produce(
            H.eventsTopic, key: "o", [F.event(eventId: "r1", type: "debit", transaction: F.transaction(creditKey: "p1"))])
        var batchPid: Int64?
        #expect(await eventually(timeout: .seconds(30)) {
            batchPid = watch.waiters(for: gatePid, other: rivalPid).first
            return batchPid != nil
        })
        let batch = try #require(batchPid)
        // 2. The rival asks for the events topic's offset rows (on a thread of its own: it waits) and waits for the
        // batch.
        let rivalLocked = DeadlockWatch.inBackground(
            rival, "SELECT 1 FROM consumer_offsets WHERE topic = $1 ORDER BY partition FOR UPDATE", [.text(H.eventsTopic)])
        #expect(await eventually(timeout: .seconds(20)) { watch.blockers(of: rivalPid).contains(batch) })
        // 3. The gate lets the batch on: it asks for u1's wallet, waits for the rival, and its deadlock check
        // aborts it; the rival gets the offset rows.
        try gate.execute("ROLLBACK")
        #expect(await eventually(timeout: .seconds(20)) { rivalLocked.withLock { $0 } != nil })
        let rivalOutcome = try #require(rivalLocked.withLock { $0 })
        if case .failure(let error) = rivalOutcome { Issue.record("the rival is never the victim: \(error)") }
        #expect(await eventually(timeout: .seconds(20)) { await databaseErrors() == 1 })
        // The retry waits for the rival now: nothing of the refund is applied.
        #expect(harness.appliedOffsets() == 3)
        #expect(try harness.count("SELECT count(*) FROM applied_events WHERE event_id = 'r1'") == 0)
        // 4. The rival gives way; the batch applied again commits once.
        try rival.execute("ROLLBACK")
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 4 })
        #expect(await databaseErrors() == 1, "one abort, one retry")
        #expect(try harness.count("SELECT count(*) FROM applied_events WHERE event_id = 'r1'") == 1)
        #expect(try harness.balances(item: "gems") == ["u1": 0, "u2": 0], "the refund took u1's 100 gems once")
        #expect(try harness.count("SELECT count(*) FROM wallet_clawbacks WHERE user_id = 'u1'") == 1)
        let user = try #require(try await harness.get(ledger, "/v1/users/u1/history").jsonObject)
        let kinds = (user["entries"] as? [[String: Any]])?.compactMap { $0["kind"] as? String }
        #expect(kinds == ["debit", "credit"])
        // What aborted it was a deadlock (the server counts them; its statistics arrive within seconds).
        #expect(await eventually(timeout: .seconds(30)) { watch.deadlocks() == deadlocksBefore + 1 })
        #expect(await ledger.stop() == 0)
        await harness.shutdown()
    }
}
