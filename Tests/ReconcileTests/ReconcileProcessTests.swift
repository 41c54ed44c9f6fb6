import FakeAppStore
import Foundation
import Kafka
import Ledger
import Postgres
import ServiceSupport
import Testing
import TestSupport

/// `receipt-reconcile` as a process against the real fake App Store, embedded-kafka, a PostgreSQL of its own, a
/// real `receipt-ledger` and (later) a real `receipt-verifier`:
/// - u1's purchase 3001 is credited, then refunded at the fake with no notification at all: only Get Refund
///   History tells; the sweep makes up its `debit` (`reconcile:refund:3001:<revocation>`) and the ledger applies it;
/// - u3's purchase 3003 is credited, then refunded with a `REFUND` notification Apple recorded but never delivered:
///   the sweep sends the notification again (the verifier turns it into its event) and makes up no second debit;
/// - u2's purchase 3002 is debited in the ledger while Apple shows no refund: reported as drift and recorded once as
///   not corrected (`reconcile_unresolved`), nothing produced.
/// A dry run first (drift reported, nothing recorded); then a sweep stopped after its second page (a crash between
/// recording a correction and producing it), resumed by the next one; a last sweep finds nothing to do.
@Suite("receipt-reconcile process", .serialized)
struct ReconcileProcessTests {
    static let topics = [
        "RECEIPTS_TOPIC": "iap.receipts.submitted", "RESULTS_TOPIC": "iap.receipts.results",
        "RETRY_TOPIC": "iap.receipts.retry", "DLQ_TOPIC": "iap.receipts.dlq",
        "NOTIFICATIONS_TOPIC": "iap.notifications.submitted", "EVENTS_TOPIC": "iap.purchase.events",
    ]
    static let bundleId = "com.example.game"

    @Test func aRefundWhoseNotificationNeverCameIsDebitedOnce() async throws {
        let directory = NSTemporaryDirectory() + "reconcile-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let minted = try FakePKIFiles.mint(into: directory)
        let fake = try await FakeAppStoreProcess.start(arguments: minted.fakeArguments)
        let kafka = try await EmbeddedKafkaProcess.start(
            topics: Self.topics.values.sorted().map { (name: $0, partitions: $0.hasSuffix(".dlq") ? 1 : 4) })
        let postgres = try TestPostgresServer.start()
        defer { postgres.stop() }
        let database = postgres.connectionString()
        let producer = try KafkaProducer(
            configuration: KafkaConfiguration(["bootstrap.servers": kafka.bootstrapServers, "linger.ms": "5"]),
            logger: Logger(label: "test-producer", threshold: .error))
        defer { producer.close(timeout: .seconds(5)) }
        let base = kafka.environment.merging(Self.topics) { $1 }.merging([
            "KAFKA_SESSION_TIMEOUT_MS": "6000", "KAFKA_HEARTBEAT_INTERVAL_MS": "500", "LOG_LEVEL": "info",
            "LEDGER_DATABASE_URL": database, "ALLOWED_BUNDLE_IDS": Self.bundleId,
        ]) { $1 }.merging(minted.verifierSettings) { $1 }.merging(fake.environment) { $1 }
        let ledger = try await ServiceProcess.start(
            .ledger, environment: base.merging(["LEDGER_API_KEYS": "tests:reconcile-key"]) { $1 })

        for id in ["3001", "3002", "3003"] {
            try await fake.registerTransactions([["id": id, "type": "Consumable", "product_id": "gems_100"]])
        }
        // Credited in order (3001 first: the never-checked purchases are checked oldest credit first).
        for (id, user) in [("3001", "u1"), ("3002", "u2"), ("3003", "u3")] {
            _ = try await producer.send(
                topic: "iap.receipts.results", key: Array(user.utf8), value: Self.result(user: user, transactionId: id))
        }
        // Credited first (the results and events topics are not ordered with each other).
        #expect(await eventually(timeout: .seconds(30)) {
            ["3001", "3002", "3003"].allSatisfy { Self.status(database, $0) == "credited" }
        })
        let nowMs = SystemTime.wallMilliseconds()
        // The ledger debited 3002 (a refund event Apple's history does not back: the reverse drift).
        _ = try await producer.send(
            topic: "iap.purchase.events", key: Array("3002".utf8),
            value: Self.debitEvent(eventId: "ledger-only-3002", transactionId: "3002", signedDateMs: nowMs))
        #expect(await eventually(timeout: .seconds(30)) { Self.status(database, "3002") == "debited" })
        #expect(Self.status(database, "3001") == "credited" && Self.status(database, "3003") == "credited")

        // Apple refunds 3001 and 3003; only 3003's REFUND notification exists (recorded, never delivered).
        for id in ["3001", "3003"] {
            try await fake.registerTransactions([
                ["id": id, "type": "Consumable", "product_id": "gems_100", "revocation_date_ms": nowMs - 60_000,
                 "revocation_reason": 0],
            ])
        }
        let notification = try await TestHTTPClient.send(
            "POST",
            fake.url + "/admin/notifications/send?type=REFUND&transaction_id=3003&deliver=0&retry_schedule_seconds=none")
        try #require(notification.status == 200, "\(notification.text)")
        let uuid = try #require(notification.jsonObject?["notification_uuid"] as? String)
        let refundId = "reconcile:refund:3001:\(nowMs - 60_000)"

        let environment = base.merging(["RECONCILE_NOTIFICATION_LAG_MINUTES": "0"]) { $1 }
        // A dry run: the drift reported, nothing recorded or produced.
        let dry = try await Self.reconcile(["--once", "--dry-run"], environment)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.summary["dry_run"] as? Bool == true)
        #expect((dry.summary["drift"] as? [String: Any])?["apple_refunded_ledger_credited"] as? Int == 2)
        #expect((dry.summary["drift"] as? [String: Any])?["ledger_debited_apple_not_refunded"] as? Int == 1)
        #expect((dry.summary["corrections"] as? [String: Any])?["found"] as? Int == 2)
        #expect((dry.summary["corrections"] as? [String: Any])?["recorded"] as? Int == 0)
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_corrections") == 0)
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_checks") == 0)
        // The ledger exports the last sweep's drift.
        #expect(await eventually(timeout: .seconds(15)) {
            await ledger.metricSum("ledger_reconcile_drift", labels: [#"direction="apple_refunded_ledger_credited""#]) == 2
        })
        #expect(await ledger.metricSum("ledger_reconcile_drift", labels: [#"direction="ledger_debited_apple_not_refunded""#]) == 1)

        // Apple's OCSP responder cannot answer: the first page's signed data cannot be judged now, so the sweep
        // stops there (exit 1) with nothing recorded, and the next sweep reads that page again.
        try await fake.setOCSP(mode: "fail")
        let unjudged = try await Self.reconcile(["--once"], environment)
        #expect(unjudged.status == 1, "\(unjudged.stderr)")
        #expect(unjudged.stderr.contains("could not be verified now"), "\(unjudged.stderr)")
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_corrections") == 0)
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_checks") == 0)
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_cursors") == 0)
        #expect(try await fake.ocspRequests() >= 1, "receipt-reconcile did not ask the OCSP responder")
        try await fake.setOCSP(mode: "answer")

        // A sweep that stops after its second page (the notification page, then 3001's refund history): the
        // notification was produced, 3001's debit is recorded but not produced.
        let stopped = try await Self.reconcile(["--once", "--stop-after-pages", "2"], environment)
        #expect(stopped.status == 3, "\(stopped.stderr)")
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_corrections WHERE produced_at_ms IS NOT NULL AND correction_id = '\(uuid)'") == 1)
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_corrections WHERE produced_at_ms IS NULL AND correction_id = '\(refundId)'") == 1)
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_corrections") == 2)

        // The next sweep produces the recorded debit first (same id) and finds nothing new: 3003's refund is
        // explained by its notification, 3001's was recorded.
        let resumed = try await Self.reconcile(["--once"], environment)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect((resumed.summary["corrections"] as? [String: Any])?["recorded"] as? Int == 0)
        #expect((resumed.summary["corrections"] as? [String: Any])?["produced"] as? Int == 1)
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_corrections WHERE produced_at_ms IS NULL") == 0)
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_corrections") == 2)
        #expect(await eventually(timeout: .seconds(30)) { Self.status(database, "3001") == "debited" })
        #expect(try Self.count(database, "SELECT amount FROM balances WHERE user_id = 'u1' AND item = 'gems'") == 0)
        #expect(Self.status(database, "3003") == "credited", "the notification waits for a verifier")

        // The verifier turns the notification sent again into its REFUND event: 3003 debited by Apple's own event.
        let verifier = try await ServiceProcess.start(.verifier, environment: base)
        #expect(await eventually(timeout: .seconds(60)) { Self.status(database, "3003") == "debited" })
        #expect(try Self.count(database, "SELECT count(*) FROM applied_events WHERE event_id = '\(uuid)'") == 1)

        // A last sweep: nothing to correct, nothing produced, nothing new; the reverse drift was recorded once, by the
        // sweep that found it, with why it is not corrected.
        let last = try await Self.reconcile(["--once"], environment)
        #expect(last.status == 0, "\(last.stderr)")
        #expect((last.summary["corrections"] as? [String: Any])?["found"] as? Int == 0)
        #expect((last.summary["corrections"] as? [String: Any])?["produced"] as? Int == 0)
        #expect((last.summary["drift"] as? [String: Any])?["apple_refunded_ledger_credited"] as? Int == 0)
        #expect((last.summary["drift"] as? [String: Any])?["ledger_debited_apple_not_refunded"] as? Int == 0)
        #expect(
            try Self.count(
                database,
                "SELECT count(*) FROM reconcile_unresolved WHERE credit_key = 'apple:production:3002' AND reason = 'ledger_debited_apple_not_refunded'")
                == 1)
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_unresolved") == 1)
        // On the events topic: the ledger-only debit, the verifier's REFUND event and the one made-up debit, once each.
        #expect(await eventually(timeout: .seconds(15)) { Self.eventsApplied(database) == 3 })
        try await Task.sleep(for: .seconds(2))
        #expect(Self.eventsApplied(database) == 3)
        #expect(try Self.count(database, "SELECT count(*) FROM applied_events WHERE event_id LIKE 'reconcile:refund:%'") == 1)
        #expect(try Self.count(database, "SELECT amount FROM balances WHERE user_id = 'u3' AND item = 'gems'") == 0)
        #expect(await eventually(timeout: .seconds(15)) {
            await ledger.metricSum("ledger_reconcile_drift", labels: [#"direction="apple_refunded_ledger_credited""#]) == 0
        })
        #expect(await ledger.metricSum("ledger_reconcile_corrections", labels: [#"kind="refund""#]) == 1)
        #expect(await ledger.metricSum("ledger_reconcile_corrections", labels: [#"kind="notification""#]) == 1)
        #expect(await ledger.metricSum("ledger_reconcile_corrections_unproduced") == 0)
        #expect((await ledger.metricSum("ledger_reconcile_last_sweep_timestamp_seconds") ?? 0) > Double(nowMs / 1_000))
        // The sweep's own migrations bookkeeping; the ledger's is untouched.
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_schema_migrations") == 3)
        // The sweep's keys compare as the ledger's do (byte by byte), so its joins with `purchases` use both indexes.
        #expect(
            try Self.count(
                database,
                """
                SELECT count(*) FROM pg_attribute WHERE attname IN ('credit_key', 'correction_id', 'drift_id')
                    AND attrelid = ANY (ARRAY['reconcile_checks'::regclass, 'reconcile_corrections'::regclass,
                        'reconcile_unresolved'::regclass, 'purchases'::regclass])
                    AND attcollation <> 'pg_catalog."C"'::regcollation
                """) == 0)
        #expect(try Self.count(database, "SELECT max(version) FROM schema_migrations") == LedgerSchema.currentVersion)

        #expect(await verifier.stop() == 0)
        #expect(await ledger.stop() == 0)
        _ = await kafka.stop()
        await fake.stop()
    }

    /// Kafka refuses the sweep's writes: the correction stays recorded (exit 1) and the next sweep produces it, once.
    @Test func aCorrectionKafkaDidNotAcknowledgeIsProducedByTheNextSweep() async throws {
        let directory = NSTemporaryDirectory() + "reconcile-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let minted = try FakePKIFiles.mint(into: directory)
        let fake = try await FakeAppStoreProcess.start(arguments: minted.fakeArguments)
        let kafka = try await EmbeddedKafkaProcess.start(
            topics: [(name: "iap.receipts.results", partitions: 2), (name: "iap.purchase.events", partitions: 2)])
        let postgres = try TestPostgresServer.start()
        defer { postgres.stop() }
        let database = postgres.connectionString()
        let producer = try KafkaProducer(
            configuration: KafkaConfiguration(["bootstrap.servers": kafka.bootstrapServers, "linger.ms": "5"]),
            logger: Logger(label: "test-producer", threshold: .error))
        defer { producer.close(timeout: .seconds(5)) }
        let base = kafka.environment.merging(Self.topics) { $1 }.merging([
            "KAFKA_SESSION_TIMEOUT_MS": "6000", "KAFKA_HEARTBEAT_INTERVAL_MS": "500", "LOG_LEVEL": "info",
            "LEDGER_DATABASE_URL": database, "ALLOWED_BUNDLE_IDS": Self.bundleId,
            "RECONCILE_NOTIFICATION_LAG_MINUTES": "0",
        ]) { $1 }.merging(minted.verifierSettings) { $1 }.merging(fake.environment) { $1 }
        let ledger = try await ServiceProcess.start(.ledger, environment: base)
        try await fake.registerTransactions([["id": "4001", "type": "Consumable", "product_id": "gems_100"]])
        _ = try await producer.send(
            topic: "iap.receipts.results", key: Array("u4".utf8), value: Self.result(user: "u4", transactionId: "4001"))
        #expect(await eventually(timeout: .seconds(30)) { Self.status(database, "4001") == "credited" })
        let revocation = SystemTime.wallMilliseconds() - 1_000
        try await fake.registerTransactions([
            ["id": "4001", "type": "Consumable", "product_id": "gems_100", "revocation_date_ms": revocation],
        ])
        let refundId = "reconcile:refund:4001:\(revocation)"

        let unreachable = base.merging(["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "KAFKA_MESSAGE_TIMEOUT_MS": "2000"]) { $1 }
        let failed = try await Self.reconcile(["--once"], unreachable)
        #expect(failed.status == 1)
        #expect(failed.stderr.contains("the next sweep produces them again under the same ids"))
        #expect((failed.summary["corrections"] as? [String: Any])?["recorded"] as? Int == 1)
        #expect((failed.summary["corrections"] as? [String: Any])?["produced"] as? Int == 0)
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_corrections WHERE produced_at_ms IS NULL AND correction_id = '\(refundId)'") == 1)
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_sweeps WHERE status = 'failed'") == 1)
        #expect(Self.status(database, "4001") == "credited", "nothing reached Kafka")

        let next = try await Self.reconcile(["--once"], base)
        #expect(next.status == 0, "\(next.stderr)")
        #expect((next.summary["corrections"] as? [String: Any])?["produced"] as? Int == 1)
        #expect((next.summary["corrections"] as? [String: Any])?["recorded"] as? Int == 0)
        #expect(await eventually(timeout: .seconds(30)) { Self.status(database, "4001") == "debited" })
        #expect(try Self.count(database, "SELECT count(*) FROM applied_events WHERE event_id = '\(refundId)'") == 1)
        #expect(Self.eventsApplied(database) == 1)

        #expect(await ledger.stop() == 0)
        _ = await kafka.stop()
        await fake.stop()
    }

    /// Issue 41 item 2: a sweep corrects a drift it finds or records why it cannot, once. u5's item subscription
    /// period 5001 was refunded with no notification, and a status notification signed after the refund was applied:
    /// the first sweep's debit is not stale (status events are ordered apart), the ledger ends debited, the second
    /// sweep finds no drift. u7's purchase 5002 was refunded and the refund reversed (REFUND_REVERSED applied, signed
    /// after the revocation) while Apple's refund history still lists it: a debit dated at the revocation would be
    /// stale, so the first sweep records why it does not correct it, and the second reports nothing new.
    @Test func twoSweepsConvergeOnRefundsALaterEventDidOrDidNotOutweigh() async throws {
        let directory = NSTemporaryDirectory() + "reconcile-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let minted = try FakePKIFiles.mint(into: directory)
        let fake = try await FakeAppStoreProcess.start(arguments: minted.fakeArguments)
        let kafka = try await EmbeddedKafkaProcess.start(
            topics: [(name: "iap.receipts.results", partitions: 2), (name: "iap.purchase.events", partitions: 2)])
        let postgres = try TestPostgresServer.start()
        defer { postgres.stop() }
        let database = postgres.connectionString()
        let producer = try KafkaProducer(
            configuration: KafkaConfiguration(["bootstrap.servers": kafka.bootstrapServers, "linger.ms": "5"]),
            logger: Logger(label: "test-producer", threshold: .error))
        defer { producer.close(timeout: .seconds(5)) }
        let base = kafka.environment.merging(Self.topics) { $1 }.merging([
            "KAFKA_SESSION_TIMEOUT_MS": "6000", "KAFKA_HEARTBEAT_INTERVAL_MS": "500", "LOG_LEVEL": "info",
            "LEDGER_DATABASE_URL": database, "ALLOWED_BUNDLE_IDS": Self.bundleId,
            "RECONCILE_NOTIFICATION_LAG_MINUTES": "0",
        ]) { $1 }.merging(minted.verifierSettings) { $1 }.merging(fake.environment) { $1 }
        let ledger = try await ServiceProcess.start(.ledger, environment: base)
        let nowMs = SystemTime.wallMilliseconds()
        let revocation = nowMs - 60_000
        let month: [String: Any] = [
            "id": "5001", "type": "Auto-Renewable Subscription", "product_id": "monthly",
            "web_order_line_item_id": "7005001", "purchase_date_ms": nowMs - 86_400_000,
            "expires_date_ms": nowMs + 29 * 86_400_000,
        ]
        try await fake.registerTransactions([month, ["id": "5002", "type": "Consumable", "product_id": "gems_100"]])
        let period = Self.period("5001", webOrderLineItemId: "7005001", purchaseDateMs: nowMs - 86_400_000)
        _ = try await producer.send(
            topic: "iap.receipts.results", key: Array("u5".utf8),
            value: Self.result(user: "u5", transactions: [period], submissionId: "s-5001"))
        _ = try await producer.send(
            topic: "iap.receipts.results", key: Array("u7".utf8), value: Self.result(user: "u7", transactionId: "5002"))
        let periodKey = "apple:production:period:7005001"
        #expect(await eventually(timeout: .seconds(30)) {
            Self.state(database, periodKey) == "credited" && Self.status(database, "5002") == "credited"
        })
        // A DID_CHANGE_RENEWAL_STATUS signed now (after the refund below) reaches the ledger; 5002's REFUND (signed at
        // the revocation) and its REFUND_REVERSED (signed now) too.
        _ = try await producer.send(
            topic: "iap.purchase.events", key: Array("5001".utf8),
            value: Self.event(eventId: "status-5001", type: "subscription_status", transaction: period, signedDateMs: nowMs))
        _ = try await producer.send(
            topic: "iap.purchase.events", key: Array("5002".utf8),
            value: Self.debitEvent(eventId: "refund-5002", transactionId: "5002", signedDateMs: revocation))
        _ = try await producer.send(
            topic: "iap.purchase.events", key: Array("5002".utf8),
            value: Self.event(
                eventId: "reversal-5002", type: "recredit", transaction: Self.transaction("5002"), signedDateMs: nowMs))
        #expect(await eventually(timeout: .seconds(30)) {
            Self.eventsApplied(database) == 3 && Self.status(database, "5002") == "recredited"
        })
        // Apple's refund history lists both as refunded at `revocation`.
        var refundedMonth = month
        refundedMonth["revocation_date_ms"] = revocation
        try await fake.registerTransactions([
            refundedMonth,
            ["id": "5002", "type": "Consumable", "product_id": "gems_100", "revocation_date_ms": revocation],
        ])

        let first = try await Self.reconcile(["--once"], base)
        #expect(first.status == 0, "\(first.stderr)")
        let drift = first.summary["drift"] as? [String: Any]
        #expect(drift?["apple_refunded_ledger_credited"] as? Int == 2)
        #expect(drift?["unresolved"] as? Int == 1)
        #expect((first.summary["corrections"] as? [String: Any])?["produced"] as? Int == 1)
        #expect(first.stderr.contains("later_event_applied"), "the unresolved drift is logged with its reason")
        #expect(await eventually(timeout: .seconds(30)) { Self.state(database, periodKey) == "debited" })
        #expect(try Self.count(database, "SELECT amount FROM balances WHERE user_id = 'u5' AND item = 'gems'") == 0)
        #expect(Self.status(database, "5002") == "recredited", "no stale debit was made up")
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_corrections WHERE credit_key = 'apple:production:5002'") == 0)
        #expect(
            try Self.count(
                database,
                "SELECT count(*) FROM reconcile_unresolved WHERE credit_key = 'apple:production:5002' AND reason = 'later_event_applied' AND direction = 'apple_refunded_ledger_credited'")
                == 1)

        let second = try await Self.reconcile(["--once"], base)
        #expect(second.status == 0, "\(second.stderr)")
        let settled = second.summary["drift"] as? [String: Any]
        #expect(settled?["apple_refunded_ledger_credited"] as? Int == 0)
        #expect(settled?["ledger_debited_apple_not_refunded"] as? Int == 0)
        #expect(settled?["unresolved"] as? Int == 0)
        #expect((second.summary["corrections"] as? [String: Any])?["found"] as? Int == 0)
        #expect((second.summary["purchases_checked"] as? Int ?? 0) >= 2, "both purchases were checked again")
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_unresolved") == 1)
        // The ledger reads the reconcile tables every few seconds: the second sweep's figures (no new drift), and the
        // drift recorded once, all time (only after the second sweep are both true).
        #expect(await eventually(timeout: .seconds(15)) {
            let unresolved = await ledger.metricSum(
                "ledger_reconcile_unresolved", labels: [#"reason="later_event_applied""#])
            let drift = await ledger.metricSum(
                "ledger_reconcile_drift", labels: [#"direction="apple_refunded_ledger_credited""#])
            return unresolved == 1 && drift == 0
        })
        #expect(await ledger.metricSum("ledger_reconcile_unresolved", labels: [#"reason="correction_not_applied""#]) == 0)

        #expect(await ledger.stop() == 0)
        _ = await kafka.stop()
        await fake.stop()
    }

    /// Issue 41 item 7: the ledger remembers the RESCIND_CONSENT notifications it applied, so the sweep sends again
    /// only a lost one (through the notifications topic, like the money notifications), and the verifier and the
    /// ledger then withdraw the consent it names.
    @Test func aLostRescindConsentIsSentAgainAndWithdrawsTheConsent() async throws {
        let directory = NSTemporaryDirectory() + "reconcile-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let minted = try FakePKIFiles.mint(into: directory)
        let fake = try await FakeAppStoreProcess.start(arguments: minted.fakeArguments)
        let kafka = try await EmbeddedKafkaProcess.start(
            topics: Self.topics.values.sorted().map { (name: $0, partitions: $0.hasSuffix(".dlq") ? 1 : 2) })
        let postgres = try TestPostgresServer.start()
        defer { postgres.stop() }
        let database = postgres.connectionString()
        let producer = try KafkaProducer(
            configuration: KafkaConfiguration(["bootstrap.servers": kafka.bootstrapServers, "linger.ms": "5"]),
            logger: Logger(label: "test-producer", threshold: .error))
        defer { producer.close(timeout: .seconds(5)) }
        let base = kafka.environment.merging(Self.topics) { $1 }.merging([
            "KAFKA_SESSION_TIMEOUT_MS": "6000", "KAFKA_HEARTBEAT_INTERVAL_MS": "500", "LOG_LEVEL": "info",
            "LEDGER_DATABASE_URL": database, "ALLOWED_BUNDLE_IDS": Self.bundleId,
            "RECONCILE_NOTIFICATION_LAG_MINUTES": "0",
        ]) { $1 }.merging(minted.verifierSettings) { $1 }.merging(fake.environment) { $1 }
        let ledger = try await ServiceProcess.start(.ledger, environment: base)
        // u6 bought under the app download the fake's RESCIND_CONSENT names, and consented.
        var gems = Self.transaction("6001")
        gems["app_transaction_id"] = "705000000000001"
        _ = try await producer.send(
            topic: "iap.receipts.results", key: Array("u6".utf8),
            value: Self.result(user: "u6", transactions: [gems], submissionId: "s-6001"))
        #expect(await eventually(timeout: .seconds(30)) { Self.status(database, "6001") == "credited" })
        try Self.execute(database, "INSERT INTO consents (user_id, consented, updated_at_ms) VALUES ('u6', true, 0)")

        // The first RESCIND_CONSENT reached the ledger (its event, as the verifier writes it); the second was lost.
        let applied = try await Self.rescind(fake)
        _ = try await producer.send(
            topic: "iap.purchase.events", key: Array(applied.utf8),
            value: Self.json([
                "schema_version": 1, "event_id": applied, "type": "info", "notification_type": "RESCIND_CONSENT",
                "subtype": NSNull(), "environment": "Production", "bundle_id": Self.bundleId, "app_apple_id": NSNull(),
                "transaction": NSNull(), "renewal": NSNull(), "subscription_status": NSNull(), "family_shared": false,
                "signed_date_ms": SystemTime.wallMilliseconds(), "received_at_ms": SystemTime.wallMilliseconds(),
                "app_transaction_id": "705000000000001",
            ]))
        #expect(await eventually(timeout: .seconds(30)) { (try? Self.consented(database, "u6")) == false })
        // u6 consents again; then the parent withdraws it again, and that notification never arrives.
        try Self.execute(
            database, "UPDATE consents SET consented = true, updated_at_ms = \(SystemTime.wallMilliseconds()) WHERE user_id = 'u6'")
        try await Task.sleep(for: .milliseconds(20))
        let lost = try await Self.rescind(fake)

        let sweep = try await Self.reconcile(["--once"], base)
        #expect(sweep.status == 0, "\(sweep.stderr)")
        #expect((sweep.summary["corrections"] as? [String: Any])?["produced"] as? Int == 1)
        #expect(
            try Self.count(
                database,
                "SELECT count(*) FROM reconcile_corrections WHERE kind = 'notification' AND event_type = 'info' AND correction_id = '\(lost)'")
                == 1)
        #expect(try Self.count(database, "SELECT count(*) FROM reconcile_corrections WHERE correction_id = '\(applied)'") == 0)

        let verifier = try await ServiceProcess.start(.verifier, environment: base)
        #expect(await eventually(timeout: .seconds(60)) { (try? Self.consented(database, "u6")) == false })
        #expect(try Self.count(database, "SELECT count(*) FROM consent_rescinds WHERE event_id IN ('\(applied)', '\(lost)')") == 2)
        // A last sweep sends nothing again.
        let last = try await Self.reconcile(["--once"], base)
        #expect(last.status == 0, "\(last.stderr)")
        #expect((last.summary["corrections"] as? [String: Any])?["found"] as? Int == 0)

        #expect(await verifier.stop() == 0)
        #expect(await ledger.stop() == 0)
        _ = await kafka.stop()
        await fake.stop()
    }

    @Test func badSettingsExitTwoAndAMissingLedgerExitsOne() async throws {
        let missing = try await Self.reconcile(["--once"], ["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("LEDGER_DATABASE_URL"))
        let usage = try await Self.reconcile(["--environment", "staging"], [:])
        #expect(usage.status == 2)
        #expect(usage.stderr.contains("--environment takes production or sandbox"))

        // A database the ledger never prepared: a clear message, exit 1, and the ledger's bookkeeping untouched.
        let directory = NSTemporaryDirectory() + "reconcile-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let minted = try FakePKIFiles.mint(into: directory)
        let postgres = try TestPostgresServer.start()
        defer { postgres.stop() }
        let environment = minted.verifierSettings.merging([
            "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "LEDGER_DATABASE_URL": postgres.connectionString(),
            "ALLOWED_BUNDLE_IDS": Self.bundleId, "APPLE_SERVER_API_URL": "http://127.0.0.1:1",
        ]) { $1 }
        let run = try await Self.reconcile(["--once"], environment)
        #expect(run.status == 1)
        #expect(run.stderr.contains("start receipt-ledger on this database first"))
        #expect(try Self.count(postgres.connectionString(), "SELECT count(*) FROM pg_tables WHERE tablename = 'schema_migrations'") == 0)
    }

    // MARK: Helpers

    static func reconcile(_ arguments: [String], _ environment: [String: String]) async throws
        -> (status: Int32?, summary: [String: Any], stderr: String)
    {
        let process = try ManagedProcess(
            executable: try TestBinaries.path("receipt-reconcile"), arguments: arguments, environment: environment)
        let status = await process.waitForExit(timeout: .seconds(120))
        let lines = process.stdoutLines.compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        let summary = lines.last(where: { $0["summary"] != nil })?["summary"] as? [String: Any] ?? [:]
        return (status, summary, process.stderrLines.joined(separator: "\n"))
    }

    static func status(_ database: String, _ transactionId: String) -> String? {
        guard let connection = try? PostgresConnection(connectionString: database, connectTimeoutSeconds: 2) else {
            return nil
        }
        defer { connection.close() }
        return try? connection.execute(
            "SELECT status FROM purchases WHERE credit_key = $1", [.text("apple:production:\(transactionId)")]
        ).rows.first?.string("status")
    }

    static func count(_ database: String, _ sql: String) throws -> Int64 {
        let connection = try PostgresConnection(connectionString: database)
        defer { connection.close() }
        return try connection.execute(sql).rows[0].int64(0)
    }

    /// Messages of the events topic the ledger applied (its stored offsets).
    static func eventsApplied(_ database: String) -> Int64 {
        (try? count(
            database,
            "SELECT coalesce(sum(next_offset), 0) FROM consumer_offsets WHERE topic = 'iap.purchase.events'")) ?? -1
    }

    static func transaction(_ id: String) -> [String: Any] {
        [
            "transaction_id": id, "original_transaction_id": id, "product_id": "gems_100", "quantity": 1,
            "purchase_date_ms": 1_700_000_000_000, "expires_date_ms": NSNull(), "cancellation_date_ms": NSNull(),
            "cancellation_reason": NSNull(), "web_order_line_item_id": NSNull(), "in_app_ownership_type": "PURCHASED",
            "is_trial_period": false, "app_account_token": NSNull(), "product_type": "consumable",
            "credit_key": "apple:production:\(id)", "creditable": true, "credit": ["item": "gems", "amount": 100],
            "revocation_percentage": NSNull(), "is_upgraded": false,
        ]
    }

    static func result(user: String, transactionId: String) -> [UInt8] {
        json([
            "schema_version": 1, "submission_id": "s-\(transactionId)", "order_id": NSNull(), "user_id": user,
            "client_id": NSNull(), "outcome": "verified", "reason": NSNull(), "source": "signed_transaction",
            "message": NSNull(), "apple_status": NSNull(), "environment": "Production", "bundle_id": bundleId,
            "transactions": [transaction(transactionId)], "submission_fingerprint": "00", "attempts": 1,
            "verified_at_ms": 1_700_000_000_000,
        ])
    }

    /// A RESCIND_CONSENT the fake records in its notification history without delivering it; its notificationUUID.
    static func rescind(_ fake: FakeAppStoreProcess) async throws -> String {
        let response = try await TestHTTPClient.send(
            "POST", fake.url + "/admin/notifications/send?type=RESCIND_CONSENT&deliver=0&retry_schedule_seconds=none")
        try #require(response.status == 200, "\(response.text)")
        return try #require(response.jsonObject?["notification_uuid"] as? String)
    }

    static func consented(_ database: String, _ userId: String) throws -> Bool {
        let connection = try PostgresConnection(connectionString: database)
        defer { connection.close() }
        return try connection.execute("SELECT consented FROM consents WHERE user_id = $1", [.text(userId)]).rows[0]
            .bool("consented")
    }

    static func execute(_ database: String, _ sql: String) throws {
        let connection = try PostgresConnection(connectionString: database)
        defer { connection.close() }
        try connection.execute(sql)
    }

    /// The ledger's state of the purchase `creditKey`.
    static func state(_ database: String, _ creditKey: String) -> String? {
        guard let connection = try? PostgresConnection(connectionString: database, connectTimeoutSeconds: 2) else {
            return nil
        }
        defer { connection.close() }
        return try? connection.execute("SELECT status FROM purchases WHERE credit_key = $1", [.text(creditKey)])
            .rows.first?.string("status")
    }

    /// An item subscription's period (300 gems a month) as results carry it.
    static func period(_ id: String, webOrderLineItemId: String, purchaseDateMs: Int64) -> [String: Any] {
        var fields = transaction(id)
        fields["product_id"] = "monthly"
        fields["product_type"] = "auto_renewable"
        fields["web_order_line_item_id"] = webOrderLineItemId
        fields["purchase_date_ms"] = purchaseDateMs
        fields["expires_date_ms"] = purchaseDateMs + 30 * 86_400_000
        fields["credit_key"] = "apple:production:period:\(webOrderLineItemId)"
        fields["credit"] = ["item": "gems", "amount": 300]
        return fields
    }

    static func result(user: String, transactions: [[String: Any]], submissionId: String) -> [UInt8] {
        json([
            "schema_version": 1, "submission_id": submissionId, "order_id": NSNull(), "user_id": user,
            "client_id": NSNull(), "outcome": "verified", "reason": NSNull(), "source": "signed_transaction",
            "message": NSNull(), "apple_status": NSNull(), "environment": "Production", "bundle_id": bundleId,
            "transactions": transactions, "submission_fingerprint": "00", "attempts": 1,
            "verified_at_ms": 1_700_000_000_000,
        ])
    }

    static func event(eventId: String, type: String, transaction: [String: Any], signedDateMs: Int64) -> [UInt8] {
        json([
            "schema_version": 1, "event_id": eventId, "type": type, "notification_type": type.uppercased(),
            "subtype": NSNull(), "environment": "Production", "bundle_id": bundleId, "app_apple_id": NSNull(),
            "transaction": transaction, "renewal": NSNull(), "subscription_status": NSNull(),
            "family_shared": false, "signed_date_ms": signedDateMs, "received_at_ms": signedDateMs,
        ])
    }

    static func debitEvent(eventId: String, transactionId: String, signedDateMs: Int64) -> [UInt8] {
        json([
            "schema_version": 1, "event_id": eventId, "type": "debit", "notification_type": "REFUND",
            "subtype": NSNull(), "environment": "Production", "bundle_id": bundleId, "app_apple_id": NSNull(),
            "transaction": transaction(transactionId), "renewal": NSNull(), "subscription_status": NSNull(),
            "family_shared": false, "signed_date_ms": signedDateMs, "received_at_ms": signedDateMs,
        ])
    }

    static func json(_ object: [String: Any]) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }
}
