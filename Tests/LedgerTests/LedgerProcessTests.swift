import Foundation
import Kafka
import Postgres
import ServiceSupport
import Testing
import TestSupport

/// `receipt-ledger` as a process over embedded-kafka and a PostgreSQL of its own: purchases, duplicates, refunds and
/// reversals produced onto the topics; a SIGKILL while batches are being applied; PostgreSQL stopped and started
/// under load. Balances are checked exactly.
@Suite("receipt-ledger process", .serialized)
struct LedgerProcessTests {
    typealias F = LedgerFixtures
    typealias H = LedgerHarness

    @Test func purchasesDuplicatesRefundsAndReversalsEndInExactBalances() async throws {
        let harness = try await LedgerHarness.start()
        let ledger = try await harness.startLedger()
        let gems = F.transaction(creditKey: "key-gems", originalTransactionId: "o-gems", quantity: 2)
        let pack = F.transaction(creditKey: "key-pack", originalTransactionId: "o-pack")
        let pro = F.transaction(creditKey: "key-pro", originalTransactionId: "o-pro", productId: "pro", credit: F.pro, expiresDateMs: 4_000_000_000_000)
        let buy = F.result(submissionId: "s1", userId: "u1", transactions: [gems])
        try await harness.produce(H.resultsTopic, key: "u1", [buy, buy, F.result(submissionId: "s3", userId: "u1", transactions: [pro])])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 3 })
        // u2 claims u1's subscription afterwards (results of different users may sit on different partitions).
        try await harness.produce(H.resultsTopic, key: "u2", [
            F.result(submissionId: "s2", userId: "u2", transactions: [pack]),
            F.result(submissionId: "s4", userId: "u2", transactions: [pro]),
            Array("{broken".utf8),
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 6 })
        // Refund of half of u2's pack, the same refund again (Apple retried), its reversal, and a second refund.
        let half = F.transaction(creditKey: "key-pack", originalTransactionId: "o-pack", revocationPercentage: 50_000)
        try await harness.produce(H.eventsTopic, key: "o-pack", [
            F.event(eventId: "n1", type: "debit", transaction: half),
            F.event(eventId: "n1", type: "debit", transaction: half),
            F.event(eventId: "n2", type: "recredit", transaction: half),
            F.event(eventId: "n3", type: "debit", transaction: pack),
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 10 })
        #expect(try harness.balances(item: "gems") == ["u1": 200, "u2": 0])

        let u1 = try await harness.get(ledger, "/v1/users/u1")
        #expect(u1.status == 200)
        let u1Body = try #require(u1.jsonObject)
        #expect(u1Body["balances"] as? [String: Int] == ["gems": 200])
        let entitlements = try #require(u1Body["entitlements"] as? [[String: Any]])
        #expect(entitlements.map { $0["credit_key"] as? String } == [F.key("key-pro")])
        #expect(entitlements.first?["expires_date_ms"] as? Int == 4_000_000_000_000)
        #expect(Set((u1Body["purchases"] as? [[String: Any]] ?? []).compactMap { $0["credit_key"] as? String }) == [F.key("key-gems"), F.key("key-pro")])

        let pack2 = try #require(try await harness.get(ledger, "/v1/purchases/\(F.key("key-pack"))").jsonObject)
        #expect(pack2["state"] as? String == "debited")
        #expect(pack2["amount_credited"] as? Int == 150)
        #expect(pack2["amount_debited"] as? Int == 150)
        let proView = try #require(try await harness.get(ledger, "/v1/purchases/\(F.key("key-pro"))").jsonObject)
        #expect(proView["owner"] as? String == "u1")
        #expect((proView["refused_claims"] as? [[String: Any]])?.map { $0["user_id"] as? String } == ["u2"])

        #expect(try await harness.get(ledger, "/v1/purchases/never-seen").status == 404)
        #expect(try await harness.get(ledger, "/v1/users/u1", key: nil).status == 401)
        #expect(try await harness.get(ledger, "/v1/users/u1", key: "wrong").status == 401)
        #expect(try await harness.get(ledger, "/v1/users/nobody").jsonObject?["balances"] as? [String: Int] == [:])
        #expect(await ledger.metricSum("ledger_dead_letters_total") == 1)
        #expect(await ledger.metricSum("ledger_duplicate_events_total") == 1)
        #expect(await ledger.metricSum("ledger_refused_claims_total") == 1)

        #expect(await ledger.stop() == 0)
        await harness.shutdown()
    }

    /// What the kubelet sets for `Service kafka` next to the pod (not librdkafka properties).
    static let serviceLinks = [
        "KAFKA_SERVICE_HOST": "10.0.0.11", "KAFKA_SERVICE_PORT": "9092", "KAFKA_PORT": "tcp://10.0.0.11:9092",
        "KAFKA_PORT_9092_TCP_ADDR": "10.0.0.11",
    ]

    @Test("--help exits 0 with the settings, an argument or a missing setting exits 2 naming it (ServiceMain)")
    func helpArgumentsAndSettingsErrors() async throws {
        let binary = try TestBinaries.path("receipt-ledger")
        let help = try ManagedProcess(executable: binary, arguments: ["--help"])
        #expect(await help.waitForExit(timeout: .seconds(10)) == 0)
        #expect(help.stdoutLines.joined(separator: "\n").contains("LEDGER_DATABASE_URL"))
        let argument = try ManagedProcess(executable: binary, arguments: ["extra"])
        #expect(await argument.waitForExit(timeout: .seconds(10)) == 2)
        let unconfigured = try ManagedProcess(
            executable: binary, environment: ["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "LEDGER_DATABASE_URL": ""])
        #expect(await unconfigured.waitForExit(timeout: .seconds(10)) == 2)
        #expect(unconfigured.stderrLines.contains { $0.contains("LEDGER_DATABASE_URL") && $0.contains("is required") })
    }

    @Test("the ledger runs as the other services: build_info, one service-link warning, one bearer-key syntax")
    func theSharedRuntime() async throws {
        let harness = try await LedgerHarness.start(
            settings: Self.serviceLinks.merging(["LEDGER_API_KEYS": "tests:\(H.apiKey),ops:s3cr3t:with:colons"]) { $1 })
        let ledger = try await harness.startLedger()
        let metrics = try await TestHTTPClient.send("GET", ledger.url("/metrics"))
        let labels =
            "version=\"\(BuildInfo.version)\",revision=\"\(BuildInfo.revision)\","
            + "swift_version=\"\(BuildInfo.swiftVersion)\","
            + "librdkafka_version=\"\(KafkaLibrary.version)\"} 1"
        #expect(String(decoding: metrics.body, as: UTF8.self).contains("ledger_build_info{\(labels)"))
        let warnings = ledger.process.stderrLines.filter { $0.contains("ignoring Kubernetes service-link variables") }
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains(Self.serviceLinks.keys.sorted().joined(separator: ",")) == true)
        // A named key keeps every ':' after its name; no part of it is a key of its own.
        #expect(try await harness.get(ledger, "/v1/users/u1", key: "s3cr3t:with:colons").status == 200)
        #expect(try await harness.get(ledger, "/v1/users/u1", key: "with:colons").status == 401)
        #expect(try await harness.get(ledger, "/v1/users/u1", key: "colons").status == 401)
        let ready = try await TestHTTPClient.send("GET", ledger.url("/readyz"))
        #expect(String(decoding: ready.body, as: UTF8.self) == #"{"status":"ready","ready":true}"#)
        #expect(await ledger.stop() == 0)

        // A bare key containing ':' is a settings error (exit 2), never a key cut at the colon.
        let refused = try ManagedProcess(
            executable: try TestBinaries.path("receipt-ledger"),
            environment: harness.environment.merging([
                "LEDGER_API_KEYS": "s3cr3t/+=:tail", "LEDGER_LISTEN": "127.0.0.1:0",
            ]) { $1 })
        #expect(await refused.waitForExit(timeout: .seconds(10)) == 2)
        #expect(refused.stderrLines.contains { $0.contains("LEDGER_API_KEYS") && !$0.contains("tail") })
        await harness.shutdown()
    }

    /// `users` users each buy `perUser` purchases of 10 gems; every fifth result is delivered twice.
    static func load(users: Int, perUser: Int, tag: String) -> [(key: String, value: [UInt8])] {
        var messages: [(String, [UInt8])] = []
        for index in 0..<perUser {
            for user in 0..<users {
                let creditKey = "\(tag)-\(user)-\(index)"
                let result = F.result(
                    submissionId: "s-\(creditKey)", userId: "user-\(user)",
                    transactions: [F.transaction(creditKey: creditKey, credit: ["item": "gems", "amount": 10])])
                messages.append(("user-\(user)", result))
                if index % 5 == 0 { messages.append(("user-\(user)", result)) }
            }
        }
        return messages
    }

    func produceLoad(_ harness: LedgerHarness, _ messages: [(key: String, value: [UInt8])]) async throws {
        for chunk in stride(from: 0, to: messages.count, by: 500) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for message in messages[chunk..<min(chunk + 500, messages.count)] {
                    group.addTask {
                        _ = try await harness.producer.send(
                            topic: H.resultsTopic, key: Array(message.key.utf8), value: message.value)
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    /// A message the database refuses with an integrity constraint violation (class 23) alone, again on the retry,
    /// is dead-lettered with the reason; its partition moves on and the message after it is applied. (Before, it was
    /// retried forever and held the partition.) A trigger stands in for a constraint the ledger's own rows break.
    @Test func aMessageRefusedByAConstraintTwiceIsDeadLetteredAndThePartitionMovesOn() async throws {
        let harness = try await LedgerHarness.start()
        let ledger = try await harness.startLedger()
        try harness.execute(
            """
            CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.credit_key = '\(F.key("poison"))' THEN
                    RAISE EXCEPTION 'poison purchase' USING ERRCODE = 'check_violation';
                END IF;
                RETURN NEW;
            END $$
            """)
        try harness.execute(
            "CREATE TRIGGER refuse_poison BEFORE INSERT ON purchases FOR EACH ROW EXECUTE FUNCTION refuse_poison()")
        try await harness.produce(H.resultsTopic, key: "u1", [
            F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "poison")]),
            F.result(submissionId: "s2", userId: "u1", transactions: [F.transaction(creditKey: "good")]),
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 2 })
        #expect(try harness.balances(item: "gems") == ["u1": 100])
        #expect(try harness.count("SELECT count(*) FROM dead_letters WHERE reason LIKE '%poison purchase%'") == 1)
        #expect(try harness.count("SELECT count(*) FROM dead_letters WHERE reason LIKE '%23514%'") == 1)
        #expect(try harness.count("SELECT count(*) FROM dead_letters") == 1)
        #expect(await ledger.metricSum("ledger_dead_letters_total") == 1)
        #expect(await ledger.stop() == 0)
        await harness.shutdown()
    }

    @Test func aLedgerKilledWhileApplyingBatchesLosesAndDoublesNothing() async throws {
        let harness = try await LedgerHarness.start(settings: ["LEDGER_BATCH_SIZE": "100"])
        let users = 20
        let perUser = 150
        let messages = Self.load(users: users, perUser: perUser, tag: "kill")
        try await produceLoad(harness, messages)
        let first = try await harness.startLedger(name: "receipt-ledger-1")
        #expect(await eventually(timeout: .seconds(60), interval: .milliseconds(10)) { harness.appliedOffsets() >= 600 })
        await first.kill()
        let appliedAtKill = harness.appliedOffsets()
        #expect(appliedAtKill < Int64(messages.count), "the kill came after everything was applied")
        // Not ready while the database is down.
        let second = try await harness.startLedger(name: "receipt-ledger-2", waitUntilReady: false)
        #expect(await eventually(timeout: .seconds(90), interval: .milliseconds(200)) { harness.appliedOffsets() == Int64(messages.count) })
        let expected = Dictionary(uniqueKeysWithValues: (0..<users).map { ("user-\($0)", Int64(perUser * 10)) })
        #expect(try harness.balances(item: "gems") == expected)
        #expect(await second.stop() == 0)
        await harness.shutdown()
    }

    @Test func twoLedgersInOneGroupOneKilledMidwayApplyEverythingOnce() async throws {
        let harness = try await LedgerHarness.start(settings: ["LEDGER_BATCH_SIZE": "50"])
        let users = 20
        let perUser = 100
        let messages = Self.load(users: users, perUser: perUser, tag: "two")
        let first = try await harness.startLedger(name: "receipt-ledger-a")
        let second = try await harness.startLedger(name: "receipt-ledger-b")
        try await produceLoad(harness, messages)
        #expect(await eventually(timeout: .seconds(60), interval: .milliseconds(10)) { harness.appliedOffsets() >= 500 })
        // The survivor takes the dead one's partitions over (from the stored offsets) after the group notices.
        await first.kill()
        #expect(await eventually(timeout: .seconds(90), interval: .milliseconds(200)) { harness.appliedOffsets() == Int64(messages.count) })
        let expected = Dictionary(uniqueKeysWithValues: (0..<users).map { ("user-\($0)", Int64(perUser * 10)) })
        #expect(try harness.balances(item: "gems") == expected)
        #expect(await second.stop() == 0)
        await harness.shutdown()
    }

    /// A rebalance while the database is down: the poll threads do not wait for it (both consumers hold their
    /// partitions, assigned and paused, instead of blocking inside the assignment), and once it is back every
    /// partition starts from its stored offset: nothing skipped, nothing applied twice.
    @Test func rebalanceWhileTheDatabaseIsDownHoldsThePartitionsAndSkipsNothing() async throws {
        let harness = try await LedgerHarness.start(settings: ["LEDGER_BATCH_SIZE": "100"])
        let users = 10
        let perUser = 100
        let messages = Self.load(users: users, perUser: perUser, tag: "rebalance-down")
        let first = try await harness.startLedger(name: "receipt-ledger-1")
        let half = messages.count / 2
        try await produceLoad(harness, Array(messages[..<half]))
        #expect(await eventually(timeout: .seconds(60), interval: .milliseconds(10)) { harness.appliedOffsets() >= 200 })
        harness.postgres.stop()
        try await produceLoad(harness, Array(messages[half...]))
        // Not ready while the database is down.
        let second = try await harness.startLedger(name: "receipt-ledger-2", waitUntilReady: false)
        // Eight partitions (four per topic) between the two, each assigned although its offsets cannot be read.
        #expect(await eventually(timeout: .seconds(60), interval: .milliseconds(200)) {
            let assigned = [
                await first.metricSum("kafka_consumer_assigned_partitions"),
                await second.metricSum("kafka_consumer_assigned_partitions"),
            ]
            return assigned.allSatisfy { ($0 ?? 0) > 0 } && assigned.compactMap { $0 }.reduce(0, +) == 8
        })
        let notReady = try await TestHTTPClient.send("GET", second.url("/readyz"), timeout: 2)
        #expect(notReady.status == 503)
        let held = "cannot read the stored offsets: the partitions stay paused until the database answers"
        #expect([first, second].allSatisfy { ledger in ledger.process.stderrLines.contains { $0.contains(held) } })
        try harness.postgres.startServer()
        #expect(await eventually(timeout: .seconds(90), interval: .milliseconds(200)) {
            harness.appliedOffsets() == Int64(messages.count)
        })
        // Exact balances: every credit applied once (a message applied twice would credit its 10 gems again).
        let expected = Dictionary(uniqueKeysWithValues: (0..<users).map { ("user-\($0)", Int64(perUser * 10)) })
        #expect(try harness.balances(item: "gems") == expected)
        let resolved = "awaiting partitions start from the stored offsets"
        #expect([first, second].contains { ledger in ledger.process.stderrLines.contains { $0.contains(resolved) } })
        for ledger in [first, second] {
            #expect(await eventually(timeout: .seconds(30)) {
                (try? await TestHTTPClient.send("GET", ledger.url("/readyz"), timeout: 2))?.status == 200
            })
        }
        #expect(await first.stop() == 0)
        #expect(await second.stop() == 0)
        await harness.shutdown()
    }

    @Test func postgresStoppedAndStartedUnderLoadSkipsNothing() async throws {
        let harness = try await LedgerHarness.start(settings: ["LEDGER_BATCH_SIZE": "100"])
        let users = 10
        let perUser = 150
        let messages = Self.load(users: users, perUser: perUser, tag: "pg")
        let ledger = try await harness.startLedger()
        let half = messages.count / 2
        try await produceLoad(harness, Array(messages[..<half]))
        #expect(await eventually(timeout: .seconds(60), interval: .milliseconds(10)) { harness.appliedOffsets() >= 300 })
        harness.postgres.stop()
        // Produced while the database is down: buffered or refetched, never skipped.
        try await produceLoad(harness, Array(messages[half...]))
        #expect(await eventually(timeout: .seconds(20)) {
            (try? await TestHTTPClient.send("GET", ledger.url("/readyz"), timeout: 2))?.status == 503
        })
        let unavailable = try await harness.get(ledger, "/v1/users/user-1")
        #expect(unavailable.status == 503)
        #expect(unavailable.header("Retry-After") == "1")
        try harness.postgres.startServer()
        #expect(await eventually(timeout: .seconds(90), interval: .milliseconds(200)) { harness.appliedOffsets() == Int64(messages.count) })
        let expected = Dictionary(uniqueKeysWithValues: (0..<users).map { ("user-\($0)", Int64(perUser * 10)) })
        #expect(try await harness.get(ledger, "/v1/users/user-1").jsonObject?["balances"] as? [String: Int] == ["gems": perUser * 10])
        #expect(try harness.balances(item: "gems") == expected)
        #expect((await ledger.metricSum("ledger_database_errors_total") ?? 0) > 0)
        #expect(await eventually(timeout: .seconds(20)) {
            (try? await TestHTTPClient.send("GET", ledger.url("/readyz"), timeout: 2))?.status == 200
        })
        #expect(await ledger.stop() == 0)
        await harness.shutdown()
    }
}
