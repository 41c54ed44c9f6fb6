import FakeAppStore
import Foundation
import Postgres
import Testing
import TestSupport

/// Issue 41 item 5, end to end as processes: a `RESCIND_CONSENT` notification in Apple's shape (its
/// `appData.signedAppTransactionInfo` an app transaction whose environment is `receiptType`, with no `environment`
/// or `signedDate` member, as Apple signs it) is POSTed by the fake App Store to receipt-ingest, becomes an `info` event
/// carrying `app_transaction_id` in receipt-verifier, and makes receipt-ledger withdraw the consent of the owner of the
/// purchase made under that app download (docs/CREDITING.md, "RESCIND_CONSENT"). Before issue 41 the verifier
/// required an `environment` member and dead-lettered every such notification as malformed.
@Suite("RESCIND_CONSENT through the pipeline", .serialized)
struct RescindConsentPipelineTests {
    @Test func aRescindConsentInApplesShapeWithdrawsTheConsentOfTheDownloadsOwner() async throws {
        let directory = NSTemporaryDirectory() + "rescind-consent-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let catalog = directory + "/catalog.json"
        try Data(#"{"products": {"gems_100": {"type": "consumable", "credit": {"item": "gems", "amount": 100}}}}"#.utf8)
            .write(to: URL(fileURLWithPath: catalog))
        let minted = try FakePKIFiles.mint(into: directory + "/pki")
        let topics = [
            "RECEIPTS_TOPIC": "iap.receipts.submitted", "RESULTS_TOPIC": "iap.receipts.results",
            "RETRY_TOPIC": "iap.receipts.retry", "DLQ_TOPIC": "iap.receipts.dlq",
            "NOTIFICATIONS_TOPIC": "iap.notifications.submitted", "EVENTS_TOPIC": "iap.purchase.events",
        ]
        let kafka = try await EmbeddedKafkaProcess.start(topics: [
            ("iap.receipts.submitted", 1), ("iap.receipts.results", 1), ("iap.receipts.retry", 1),
            ("iap.receipts.dlq", 1), ("iap.notifications.submitted", 1), ("iap.purchase.events", 1),
        ])
        let fake = try await FakeAppStoreProcess.start(arguments: ["--latency-ms", "5"] + minted.fakeArguments)
        let postgres = try TestPostgresServer.start()
        let base = kafka.environment.merging(topics) { $1 }.merging([
            "KAFKA_SESSION_TIMEOUT_MS": "6000", "KAFKA_HEARTBEAT_INTERVAL_MS": "500",
        ]) { $1 }
        let ingest = try await ServiceProcess.start(.ingest, environment: base)
        let verifier = try await ServiceProcess.start(
            .verifier,
            environment: base.merging(fake.environment) { $1 }.merging(minted.verifierSettings) { $1 }.merging([
                "ALLOWED_BUNDLE_IDS": "com.example.game", "PRODUCT_CATALOG_FILE": catalog,
            ]) { $1 })
        let ledger = try await ServiceProcess.start(
            .ledger, environment: base.merging(["LEDGER_DATABASE_URL": postgres.connectionString()]) { $1 })

        // The child's purchase, made under app download 705000000000777, credited through the pipeline.
        try await fake.registerTransactions([["id": "2000000000000777", "app_transaction_id": "705000000000777"]])
        let signed = try await fake.signedTransaction(id: "2000000000000777")
        let submitted = try await TestHTTPClient.postJSON(
            ingest.url("/v1/receipts"), ["signed_transaction": signed, "user_id": "child"])
        #expect(submitted.status == 202, "\(submitted.text)")
        let credited = await eventually(timeout: .seconds(60), interval: .milliseconds(200)) {
            let view = try? await TestHTTPClient.send("GET", ledger.url("/v1/users/child"), timeout: 5).jsonObject
            return (view?["balances"] as? [String: Int]) == ["gems": 100]
        }
        #expect(credited)
        let consent = try await TestHTTPClient.send("PUT", ledger.url("/v1/users/child/consent"), timeout: 5)
        #expect(consent.status == 200 && consent.jsonObject?["consented"] as? Bool == true)

        // The parent withdraws consent: Apple sends RESCIND_CONSENT to the ingest's notification URL.
        let target = ingest.url("/v1/apple/notifications")
        let send = try await TestHTTPClient.send(
            "POST",
            fake.url + "/admin/notifications/send?type=RESCIND_CONSENT&app_transaction_id=705000000000777&url="
                + (target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target))
        #expect(send.status == 200, "\(send.text)")
        // The fake signs its app transaction in Apple's shape (FakeConformsToAppleTests checks it member by member
        // against Apple's AppTransaction model): no environment member for the verifier to rely on.
        #expect(send.jsonObject?["notification_type"] as? String == "RESCIND_CONSENT", "\(send.text)")

        let withdrawn = await eventually(timeout: .seconds(60), interval: .milliseconds(200)) {
            (try? Self.consented("child", postgres)) == false
        }
        #expect(withdrawn, "the ledger withdrew the child's consent")
        #expect(await verifier.metricSum(
            "verifier_notification_events_total", labels: [#"notification_type="RESCIND_CONSENT""#, #"type="info""#])
            == 1)
        #expect((await verifier.metricSum("verifier_notification_rejections_total") ?? 0) == 0)

        #expect(await ledger.stop() == 0)
        #expect(await verifier.stop() == 0)
        #expect(await ingest.stop() == 0)
        _ = await fake.stop()
        _ = await kafka.stop()
        postgres.stop()
    }

    /// The consent row of `user` (nil: none).
    static func consented(_ user: String, _ postgres: TestPostgresServer) throws -> Bool? {
        let connection = try PostgresConnection(connectionString: postgres.connectionString(), connectTimeoutSeconds: 2)
        let rows = try connection.execute("SELECT consented FROM consents WHERE user_id = $1", [.text(user)]).rows
        return try rows.first?.bool("consented")
    }
}
