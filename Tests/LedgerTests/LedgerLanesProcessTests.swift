import Foundation
import Postgres
import Testing
import TestSupport

/// The Kafka worker's apply lanes (`LedgerWorker.lanes`, `RecordBuffer`), through the real `receipt-ledger` process:
/// a batch stuck on a lock holds only its own partition, and another partition's messages are applied meanwhile on
/// the other lane; the stuck partition's message is applied once the lock goes, exactly once.
@Suite("receipt-ledger: two apply lanes", .serialized)
struct LedgerLanesProcessTests {
    typealias F = LedgerFixtures
    typealias H = LedgerHarness

    @Test func aPartitionStuckOnALockDoesNotHoldAnotherPartition() async throws {
        let harness = try await H.start()
        let ledger = try await harness.startLedger()
        // Two keys on two partitions of the results topic, each with an applied result (so both offset rows exist).
        let first = try await send(harness, key: "k-a", user: "u1", purchase: "p1")
        var second = first
        var produced: Int64 = 1
        for attempt in 0..<64 where second.partition == first.partition {
            second = try await send(harness, key: "k-b\(attempt)", user: "u\(attempt + 100)", purchase: "q\(attempt)")
            produced += 1
        }
        #expect(second.partition != first.partition, "64 keys all hashed to one of four partitions")
        let applied = produced
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == applied })

        // A session holds the first partition's offset row: the batch that takes that partition waits for it.
        let gate = try PostgresConnection(connectionString: harness.postgres.connectionString())
        defer { gate.close() }
        let observer = try PostgresConnection(connectionString: harness.postgres.connectionString())
        defer { observer.close() }
        let gatePid = try gate.execute("SELECT pg_backend_pid() AS pid").rows[0].int64("pid")
        try gate.execute("BEGIN")
        try gate.execute(
            "SELECT 1 FROM consumer_offsets WHERE topic = $1 AND partition = $2 FOR UPDATE",
            [.text(H.resultsTopic), .int(Int64(first.partition))])
        _ = try await send(harness, key: first.key, user: "u2", purchase: "p2")
        #expect(await eventually(timeout: .seconds(30)) {
            let waiting = try? observer.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))", [.int(gatePid)])
            return (try? waiting?.rows[0].int64(0)) == 1
        })

        // The other partition's result is applied while that batch waits.
        _ = try await send(harness, key: second.key, user: "u3", purchase: "p3")
        #expect(await eventually(timeout: .seconds(30)) { (try? purchases(harness, "p3")) == 1 })
        #expect(try purchases(harness, "p2") == 0, "the stuck batch applied nothing")
        #expect(harness.appliedOffsets() == applied + 1)

        // The lock goes: the stuck batch commits, once.
        try gate.execute("ROLLBACK")
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == applied + 2 })
        #expect(try purchases(harness, "p2") == 1)
        let balances = try harness.balances(item: "gems")
        #expect(balances["u1"] == 100 && balances["u2"] == 100 && balances["u3"] == 100)
        #expect(await ledger.stop() == 0)
        await harness.shutdown()
    }

    struct Sent {
        let key: String
        let partition: Int32
    }

    /// Produces one verified result of `purchase` for `user` keyed by `key`; where it landed.
    private func send(_ harness: H, key: String, user: String, purchase: String) async throws -> Sent {
        let report = try await harness.producer.send(
            topic: H.resultsTopic, key: Array(key.utf8),
            value: F.result(
                submissionId: "s-\(purchase)", userId: user, transactions: [F.transaction(creditKey: purchase)]))
        return Sent(key: key, partition: report.partition)
    }

    private func purchases(_ harness: H, _ label: String) throws -> Int64 {
        try harness.count("SELECT count(*) FROM purchases WHERE credit_key = '\(F.key(label))'")
    }
}
