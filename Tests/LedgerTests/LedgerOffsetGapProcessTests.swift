import EmbeddedKafka
import Foundation
import Kafka
import Postgres
import ServiceSupport
import Testing
import TestSupport

/// A database older than the topics' retention, with the real executable over embedded-kafka: a partition whose
/// stored offset lies below its first retained offset is not consumed (the messages in between were deleted before
/// the ledger applied them, and librdkafka would skip them without a word), the ledger is not ready and says why,
/// the other partitions go on, until `LEDGER_ACCEPT_OFFSET_GAP` names that gap.
///
/// How the gap is made: librdkafka 2.0.2's mock cluster has no DeleteRecords handler (its API table stops at
/// EndTxn), but it keeps at most 5 MiB per partition and drops the oldest message sets beyond that, moving the
/// partition's low watermark as retention would. So the test stores offset 1 (one result applied), stops the
/// ledger, and writes over 5 MiB more to the same partition: offset 1 and the next ones are gone, deterministically.
@Suite(.serialized) struct LedgerOffsetGapProcessTests {
    typealias F = LedgerFixtures
    typealias H = LedgerHarness

    /// A rejected result (nothing to credit) carrying `padding` bytes of message: retention's fodder.
    static func filler(_ index: Int, padding: Int) -> [UInt8] {
        F.json([
            "schema_version": 1, "submission_id": "filler-\(index)", "order_id": NSNull(), "user_id": "u1",
            "client_id": NSNull(), "outcome": "rejected", "reason": "invalid_receipt", "source": "verify_receipt",
            "message": String(repeating: "x", count: padding), "apple_status": 21_002, "environment": "Production",
            "bundle_id": "com.example.app", "transactions": [], "submission_fingerprint": "00", "attempts": 1,
            "verified_at_ms": 1_700_000_000_000,
        ])
    }

    func readiness(_ ledger: ServiceProcess) async -> (status: Int, reason: String)? {
        guard let response = try? await TestHTTPClient.send("GET", ledger.url("/readyz"), timeout: 2) else { return nil }
        let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return (response.status, object?["reason"] as? String ?? "")
    }

    func storedOffset(_ harness: LedgerHarness, partition: Int32) throws -> Int64? {
        let connection = try PostgresConnection(connectionString: harness.postgres.connectionString())
        defer { connection.close() }
        return try connection.execute(
            "SELECT next_offset FROM consumer_offsets WHERE topic = $1 AND partition = $2",
            [.text(H.resultsTopic), .int(Int64(partition))]
        ).rows.first?.int64("next_offset")
    }

    @Test func aPartitionStoredBelowItsFirstRetainedOffsetIsHeldUntilTheGapIsAccepted() async throws {
        let harness = try await LedgerHarness.start()
        defer { Task { await harness.shutdown() } }
        let first = try await harness.startLedger()
        let credited = try await harness.producer.send(
            topic: H.resultsTopic, key: Array("u1".utf8),
            value: F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "k1")]))
        let partition = credited.partition
        #expect(await eventually(timeout: .seconds(30)) { (try? storedOffset(harness, partition: partition)) == 1 })
        _ = await first.stop()

        // While the ledger is down, over 5 MiB more reach the partition: the mock cluster drops its oldest message
        // sets, offset 1 among them. Then a purchase of u1's that is still there.
        for index in 0..<32 {
            let report = try await harness.producer.send(
                topic: H.resultsTopic, key: Array("u1".utf8), value: Self.filler(index, padding: 200_000))
            #expect(report.partition == partition)
        }
        let kept = try await harness.producer.send(
            topic: H.resultsTopic, key: Array("u1".utf8),
            value: F.result(submissionId: "s2", userId: "u1", transactions: [F.transaction(creditKey: "k2")]))
        let acceptance = "\(H.resultsTopic):\(partition):1"

        // The ledger holds the partition: not ready, saying which gap and how to accept it; an error log line names
        // topic, partition, stored offset and low watermark; the gauge counts it; nothing of it is applied.
        let held = try await ServiceProcess.start(
            .ledger, environment: harness.environment, name: "held", waitUntilReady: false)
        let line = try await held.process.waitForStderrLine(timeout: .seconds(30)) {
            $0.contains("\"accept_with\":\"\(acceptance)\"") && $0.contains("\"level\":\"error\"")
        }
        let logged = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(logged["topic"] as? String == H.resultsTopic)
        #expect(logged["partition"] as? Int == Int(partition))
        #expect(logged["stored_offset"] as? Int == 1)
        let low = try #require(logged["low_watermark"] as? Int)
        #expect(low > 1 && low <= Int(kept.offset), "retention deleted offset 1 and kept the last purchase")
        #expect(await eventually(timeout: .seconds(30)) {
            guard let ready = await readiness(held) else { return false }
            return ready.status == 503 && ready.reason.contains("LEDGER_ACCEPT_OFFSET_GAP=\(acceptance)")
        })
        #expect(await held.metricSum("ledger_offset_gap_partitions") == 1)

        // The other partitions go on: a purchase of u2's on another partition is credited.
        var otherKey = 0
        var other = try await harness.producer.send(
            topic: H.resultsTopic, key: Array("other-\(otherKey)".utf8),
            value: F.result(submissionId: "probe-\(otherKey)", userId: "u2", transactions: [], outcome: "rejected"))
        while other.partition == partition {
            otherKey += 1
            other = try await harness.producer.send(
                topic: H.resultsTopic, key: Array("other-\(otherKey)".utf8),
                value: F.result(submissionId: "probe-\(otherKey)", userId: "u2", transactions: [], outcome: "rejected"))
        }
        _ = try await harness.producer.send(
            topic: H.resultsTopic, key: Array("other-\(otherKey)".utf8),
            value: F.result(submissionId: "s3", userId: "u2", transactions: [F.transaction(creditKey: "k3")]))
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.balances(item: "gems"))?["u2"] == 100 })
        #expect(try harness.balances(item: "gems")["u1"] == 100, "nothing of the held partition is applied")
        #expect(try storedOffset(harness, partition: partition) == 1)
        #expect(await readiness(held)?.status == 503)
        _ = await held.stop()

        // An entry for another stored offset accepts nothing.
        let wrong = try await ServiceProcess.start(
            .ledger, environment: harness.environment.merging(
                ["LEDGER_ACCEPT_OFFSET_GAP": "\(H.resultsTopic):\(partition):0"]) { $1 },
            name: "wrong", waitUntilReady: false)
        #expect(await eventually(timeout: .seconds(30)) {
            await readiness(wrong)?.reason.contains("LEDGER_ACCEPT_OFFSET_GAP=\(acceptance)") == true
        })
        #expect(await wrong.metricSum("ledger_offset_gap_partitions") == 1)
        _ = await wrong.stop()
        #expect(try storedOffset(harness, partition: partition) == 1)

        // Accepted: the partition goes on from its first retained offset, the loss is recorded, u1's purchase that
        // was still there is credited.
        let accepted = try await ServiceProcess.start(
            .ledger, environment: harness.environment.merging(["LEDGER_ACCEPT_OFFSET_GAP": acceptance]) { $1 },
            name: "accepted")
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.balances(item: "gems"))?["u1"] == 200 })
        #expect(try storedOffset(harness, partition: partition) == kept.offset + 1)
        #expect(try harness.count("SELECT count(*) FROM accepted_offset_gaps") == 1)
        #expect(
            try harness.count(
                "SELECT low_watermark FROM accepted_offset_gaps WHERE stored_offset = 1 AND partition = \(partition)")
                == Int64(low))
        #expect(await accepted.metricSum("ledger_offset_gap_partitions") == 0)
        #expect(await accepted.metricSum("ledger_offset_gap_accepted_offsets_total") == Double(low - 1))
        _ = await accepted.stop()

        // The entry left in place changes nothing at the next start: there is no gap any more.
        let again = try await ServiceProcess.start(
            .ledger, environment: harness.environment.merging(["LEDGER_ACCEPT_OFFSET_GAP": acceptance]) { $1 },
            name: "again")
        #expect(await readiness(again)?.status == 200)
        #expect(try harness.count("SELECT count(*) FROM accepted_offset_gaps") == 1)
        #expect(try harness.balances(item: "gems") == ["u1": 200, "u2": 100])
        _ = await again.stop()
    }

    /// A running ledger whose fetching stays paused for longer than retention (here: the database is down and the
    /// buffer, one message, full) resumes at a position retention deleted. librdkafka resets it to the first
    /// retained offset without a word (`auto.offset.reset=earliest`), and no assignment check runs: the store sees
    /// the jump before applying anything past it, and the partition is held exactly like a gap found at
    /// assignment (error line, not ready, gauge); the same `LEDGER_ACCEPT_OFFSET_GAP` entry accepts it.
    @Test func aPositionRetentionDeletedWhileFetchingWasPausedIsHeldNotSkipped() async throws {
        let harness = try await LedgerHarness.start(settings: ["LEDGER_MAX_BUFFERED_MESSAGES": "1"])
        defer { Task { await harness.shutdown() } }
        let paused = try await harness.startLedger(name: "paused")
        let credited = try await harness.producer.send(
            topic: H.resultsTopic, key: Array("u1".utf8),
            value: F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "k1")]))
        let partition = credited.partition
        #expect(await eventually(timeout: .seconds(30)) { (try? storedOffset(harness, partition: partition)) == 1 })

        // The database goes away: what the ledger fetches next waits, and fetching pauses behind it. Meanwhile over
        // 5 MiB reach the partition, so the mock cluster drops its oldest message sets, the paused position's among
        // them; then a purchase of u1's that is still there.
        harness.postgres.stop()
        #expect(await eventually(timeout: .seconds(20)) { await readiness(paused)?.status == 503 })
        for index in 0..<32 {
            _ = try await harness.producer.send(
                topic: H.resultsTopic, key: Array("u1".utf8), value: Self.filler(index, padding: 200_000))
        }
        let kept = try await harness.producer.send(
            topic: H.resultsTopic, key: Array("u1".utf8),
            value: F.result(submissionId: "s2", userId: "u1", transactions: [F.transaction(creditKey: "k2")]))
        #expect(kept.partition == partition)
        try harness.postgres.startServer()

        // Fetching resumes past what retention deleted: held, named in an error line, not ready, counted.
        let line = try await paused.process.waitForStderrLine(timeout: .seconds(60)) {
            $0.contains("offsets jumped past its stored offset") && $0.contains("\"level\":\"error\"")
        }
        let logged = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(logged["topic"] as? String == H.resultsTopic)
        #expect(logged["partition"] as? Int == Int(partition))
        let stored = try #require(logged["stored_offset"] as? Int)
        let jumpedTo = try #require(logged["low_watermark"] as? Int)
        #expect(jumpedTo > stored && jumpedTo <= Int(kept.offset), "the position was deleted; the purchase kept")
        let acceptance = "\(H.resultsTopic):\(partition):\(stored)"
        #expect(logged["accept_with"] as? String == acceptance)
        #expect(await eventually(timeout: .seconds(30)) {
            guard let ready = await readiness(paused) else { return false }
            return ready.status == 503 && ready.reason.contains("LEDGER_ACCEPT_OFFSET_GAP=\(acceptance)")
        })
        #expect(await paused.metricSum("ledger_offset_gap_partitions") == 1)
        #expect(try storedOffset(harness, partition: partition) == Int64(stored), "nothing past the jump applied")
        #expect(try harness.balances(item: "gems")["u1"] == 100, "u1's kept purchase is not credited past the gap")
        _ = await paused.stop()

        // Accepted by the entry the line named (found again at assignment now): u1's purchase is credited. With the
        // default buffer: one message at a time would pause and resume fetching after each 200 kB filler.
        let accepted = try await ServiceProcess.start(
            .ledger,
            environment: harness.environment.merging(
                ["LEDGER_ACCEPT_OFFSET_GAP": acceptance, "LEDGER_MAX_BUFFERED_MESSAGES": "20000"]) { $1 },
            name: "accepted")
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.balances(item: "gems"))?["u1"] == 200 })
        #expect(
            try harness.count(
                "SELECT count(*) FROM accepted_offset_gaps WHERE stored_offset = \(stored) AND partition = \(partition)")
                == 1)
        #expect(await accepted.metricSum("ledger_offset_gap_partitions") == 0)
        _ = await accepted.stop()
    }

    /// A partition whose watermarks its leader does not give on assignment is not started at its stored offset
    /// unjudged (librdkafka would reset a deleted position to the first retained offset): it awaits, paused, the
    /// ledger not ready and saying why, and the worker checks it again until the leader answers; then the gap is
    /// found and held as usual. The mock cluster runs in this process so that its ListOffsets answers can fail.
    @Test func aPartitionWhoseWatermarksAreUnknownAwaitsUntilItIsJudged() async throws {
        let cluster = try EmbeddedKafkaCluster(
            brokers: 1, topics: [(H.resultsTopic, 4), (H.eventsTopic, 4)],
            logger: Logger(label: "embedded-kafka", threshold: .error))
        defer { cluster.close() }
        let postgres = try TestPostgresServer.start()
        defer { postgres.stop() }
        let producer = try KafkaProducer(
            configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers, "linger.ms": "5"]),
            logger: Logger(label: "test-producer", threshold: .error))
        defer { producer.close(timeout: .seconds(5)) }
        let environment = [
            "KAFKA_BOOTSTRAP_SERVERS": cluster.bootstrapServers, "KAFKA_FETCH_WAIT_MAX_MS": "10",
            "RESULTS_TOPIC": H.resultsTopic, "EVENTS_TOPIC": H.eventsTopic,
            "LEDGER_DATABASE_URL": postgres.connectionString(), "LEDGER_API_KEYS": "tests:\(H.apiKey)",
            "KAFKA_SESSION_TIMEOUT_MS": "6000", "KAFKA_HEARTBEAT_INTERVAL_MS": "500", "LOG_LEVEL": "info",
        ]
        func stored(_ partition: Int32) throws -> Int64? {
            let connection = try PostgresConnection(connectionString: postgres.connectionString())
            defer { connection.close() }
            return try connection.execute(
                "SELECT next_offset FROM consumer_offsets WHERE topic = $1 AND partition = $2",
                [.text(H.resultsTopic), .int(Int64(partition))]
            ).rows.first?.int64("next_offset")
        }

        let first = try await ServiceProcess.start(.ledger, environment: environment, name: "first")
        let credited = try await producer.send(
            topic: H.resultsTopic, key: Array("u1".utf8),
            value: F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "k1")]))
        let partition = credited.partition
        #expect(await eventually(timeout: .seconds(30)) { (try? stored(partition)) == 1 })
        _ = await first.stop()
        for index in 0..<32 {
            _ = try await producer.send(
                topic: H.resultsTopic, key: Array("u1".utf8), value: Self.filler(index, padding: 200_000))
        }
        _ = try await producer.send(
            topic: H.resultsTopic, key: Array("u1".utf8),
            value: F.result(submissionId: "s2", userId: "u1", transactions: [F.transaction(creditKey: "k2")]))

        // Every ListOffsets request (API key 2: watermarks, librdkafka's own start lookups) fails, retriably
        // (LEADER_NOT_AVAILABLE, 5), for far longer than the test: the partition's start and end are not known.
        cluster.pushRequestErrors(apiKey: 2, errors: Array(repeating: KafkaErrorCode(rawValue: 5), count: 100_000))
        let blind = try await ServiceProcess.start(.ledger, environment: environment, name: "blind", waitUntilReady: false)
        let notKnown = "the first retained offset of \(H.resultsTopic)[\(partition)] is not known"
        #expect(await eventually(timeout: .seconds(60)) {
            guard let ready = await readiness(blind) else { return false }
            return ready.status == 503 && ready.reason.contains(notKnown)
        })
        #expect(try stored(partition) == 1)

        // The leader answers again: the worker's next check finds the gap and holds the partition as usual.
        cluster.clearRequestErrors(apiKey: 2)
        let acceptance = "\(H.resultsTopic):\(partition):1"
        _ = try await blind.process.waitForStderrLine(timeout: .seconds(60)) {
            $0.contains("\"accept_with\":\"\(acceptance)\"") && $0.contains("is below its first retained offset")
        }
        #expect(await eventually(timeout: .seconds(30)) {
            guard let ready = await readiness(blind) else { return false }
            return ready.status == 503 && ready.reason.contains("LEDGER_ACCEPT_OFFSET_GAP=\(acceptance)")
        })
        #expect(await blind.metricSum("ledger_offset_gap_partitions") == 1)
        #expect(try stored(partition) == 1, "nothing of the partition applied")
        _ = await blind.stop()
    }
}
