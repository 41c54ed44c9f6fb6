import Foundation
import Testing
import TestSupport

/// The whole chain as separate processes: receipts POSTed to receipt-ingest, verified by receipt-verifier against the
/// fake App Store with a product catalog, credited by receipt-ledger. Keys are read from the ledger's answers.
@Suite("ingest -> verifier -> ledger", .serialized)
struct LedgerPipelineTests {
    static let topics = [
        "RECEIPTS_TOPIC": "iap.receipts.submitted", "RESULTS_TOPIC": "iap.receipts.results",
        "RETRY_TOPIC": "iap.receipts.retry", "DLQ_TOPIC": "iap.receipts.dlq",
        "NOTIFICATIONS_TOPIC": "iap.notifications.submitted", "EVENTS_TOPIC": "iap.purchase.events",
    ]

    /// A receipt the fake App Store accepts: base64 of its scenario (Sources/FakeAppStore/README.md).
    static func receipt(transactionId: String, product: String) -> String {
        let scenario =
            #"{"scenario":"valid","env":"Production","bundle_id":"com.example.game","transactions":[{"id":"\#(transactionId)","product":"\#(product)"}]}"#
        return Data(scenario.utf8).base64EncodedString()
    }

    @Test func purchasesDuplicatesAndARestoreByAnotherUserEndInExactBalances() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-catalog-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let catalog = directory.appendingPathComponent("catalog.json")
        try Data(
            #"{"products": {"gems_100": {"type": "consumable", "credit": {"item": "gems", "amount": 100}}, "pro_unlock": {"type": "non_consumable", "credit": {"entitlement": "pro"}}}}"#
                .utf8
        ).write(to: catalog)

        let kafka = try await EmbeddedKafkaProcess.start(topics: [
            ("iap.receipts.submitted", 2), ("iap.receipts.results", 2), ("iap.receipts.retry", 1),
            ("iap.receipts.dlq", 1), ("iap.notifications.submitted", 1), ("iap.purchase.events", 1),
        ])
        let fake = try await FakeAppStoreProcess.start(arguments: ["--latency-ms", "5"])
        let postgres = try TestPostgresServer.start()
        let quickGroups = ["KAFKA_SESSION_TIMEOUT_MS": "6000", "KAFKA_HEARTBEAT_INTERVAL_MS": "500"]
        let base = kafka.environment.merging(Self.topics) { $1 }.merging(quickGroups) { $1 }
        let ingest = try await ServiceProcess.start(.ingest, environment: base)
        let verifier = try await ServiceProcess.start(
            .verifier,
            environment: base.merging(fake.environment) { $1 }.merging([
                "ALLOWED_BUNDLE_IDS": "com.example.game", "PRODUCT_CATALOG_FILE": catalog.path,
            ]) { $1 })
        let ledger = try await ServiceProcess.start(
            .ledger,
            environment: base.merging(["LEDGER_DATABASE_URL": postgres.connectionString()]) { $1 })

        func submit(_ receipt: String, user: String) async throws {
            let response = try await TestHTTPClient.postJSON(
                ingest.url("/v1/receipts"), ["receipt_data": receipt, "user_id": user])
            try #require(response.status == 202, "ingest answered \(response.status): \(response.text)")
        }
        func user(_ id: String) async -> [String: Any]? {
            try? await TestHTTPClient.send("GET", ledger.url("/v1/users/\(id)"), timeout: 5).jsonObject
        }

        let gems = Self.receipt(transactionId: "7100000000000001", product: "gems_100")
        let pro = Self.receipt(transactionId: "7100000000000002", product: "pro_unlock")
        // The same receipt twice (a client retrying with a new submission id), and a second purchase.
        try await submit(gems, user: "buyer")
        try await submit(gems, user: "buyer")
        try await submit(pro, user: "buyer")
        let credited = await eventually(timeout: .seconds(60), interval: .milliseconds(200)) {
            let view = await user("buyer")
            return (view?["balances"] as? [String: Int]) == ["gems": 100]
                && (view?["entitlements"] as? [[String: Any]])?.count == 1
        }
        let buyerView = await user("buyer")
        #expect(credited, "buyer: \(String(describing: buyerView))")

        // The same non-consumable restored on another account: refused under keep, recorded, never credited.
        try await submit(pro, user: "someone-else")
        let buyerAfter = await user("buyer")
        let proKey = try #require((buyerAfter?["entitlements"] as? [[String: Any]])?.first?["credit_key"] as? String)
        let refused = await eventually(timeout: .seconds(60), interval: .milliseconds(200)) {
            let view = try? await TestHTTPClient.send("GET", ledger.url("/v1/purchases/\(proKey)"), timeout: 5).jsonObject
            return (view?["refused_claims"] as? [[String: Any]])?.first?["user_id"] as? String == "someone-else"
        }
        #expect(refused)
        let other = await user("someone-else")
        #expect((other?["entitlements"] as? [[String: Any]])?.isEmpty == true)
        let buyer = await user("buyer")
        #expect(buyer?["balances"] as? [String: Int] == ["gems": 100])

        #expect(await ledger.stop() == 0)
        #expect(await verifier.stop() == 0)
        #expect(await ingest.stop() == 0)
        _ = await fake.stop()
        _ = await kafka.stop()
        postgres.stop()
    }
}
