import FakeAppStore
import Foundation
import Testing
import TestSupport

/// `receipt-admin` with the ledger configured (`LEDGER_URL`, `LEDGER_API_KEY`), as processes: the real
/// `fake-appstore`, `receipt-ledger` over embedded-kafka and a PostgreSQL of its own. The support engineer's
/// question answered from both sides: what Apple says about an order, and what the ledger did with each purchase.
@Suite("receipt-admin with the ledger", .serialized)
struct ReceiptAdminLedgerProcessTests {
    typealias F = LedgerFixtures
    typealias H = LedgerHarness

    private func admin(_ arguments: [String], settings: [String: String]) async throws
        -> (status: Int32, json: [String: Any])
    {
        let run = try await ToolRun.run(
            try TestBinaries.path("receipt-admin"), arguments: arguments + ["--json"], environment: settings)
        return (run.status, try #require(run.lastJSONObject, "\(run.stdout) \(run.stderr)"))
    }

    @Test func lookupOrderAndSetAccountTokenShowTheLedgersStateAndOwner() async throws {
        let directory = NSTemporaryDirectory() + "receipt-admin-ledger-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let minted = try FakePKIFiles.mint(into: directory)
        let fake = try await FakeAppStoreProcess.start(arguments: minted.fakeArguments)
        let now = Int(Date().timeIntervalSince1970 * 1000)
        try await fake.registerTransactions([
            ["id": "2000000000000802", "type": "Auto-Renewable Subscription", "product_id": "monthly",
             "web_order_line_item_id": "7000000000000802", "order_id": "ORDERLEDGR",
             "purchase_date_ms": now - 86_400_000, "expires_date_ms": now + 20 * 86_400_000],
            ["id": "2000000000000803", "order_id": "ORDERLEDGR"],
        ])
        let harness = try await LedgerHarness.start()
        let ledger = try await harness.startLedger()
        // u-981's app submitted the subscription period; the consumable never reached the ledger.
        try await harness.produce(H.resultsTopic, key: "u-981", [
            F.result(submissionId: "s1", userId: "u-981", transactions: [F.transaction(creditKey: "7000000000000802")])
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 1 })

        var settings = minted.verifierSettings.merging(fake.environment) { $1 }
        settings["ALLOWED_BUNDLE_IDS"] = "com.example.game"
        settings["LEDGER_URL"] = ledger.url("")
        settings["LEDGER_API_KEY"] = H.apiKey

        let order = try await admin(["lookup-order", "ORDERLEDGR"], settings: settings)
        #expect(order.status == 0, "\(order.json)")
        let transactions = try #require(order.json["transactions"] as? [[String: Any]])
        let period = try #require(transactions.first { $0["transaction_id"] as? String == "2000000000000802" })
        #expect(period["credit_key"] as? String == F.key("7000000000000802"))
        let owned = try #require(period["ledger"] as? [String: Any])
        #expect(owned["known"] as? Bool == true && owned["owner"] as? String == "u-981")
        #expect(owned["state"] as? String == "credited")
        let gems = try #require(transactions.first { $0["transaction_id"] as? String == "2000000000000803" })
        #expect((gems["ledger"] as? [String: Any])?["known"] as? Bool == false)

        let token = try await admin(
            ["set-account-token", "2000000000000802", "7e3fb20b-4cdb-47cc-936d-99d65f608138"], settings: settings)
        #expect(token.status == 0, "\(token.json)")
        let view = try #require(token.json["ledger"] as? [String: Any])
        #expect(view["credit_key"] as? String == F.key("7000000000000802"))
        #expect((view["purchase"] as? [String: Any])?["owner"] as? String == "u-981")
        #expect((view["how_to_move"] as? String)?.contains("LEDGER_OWNERSHIP_POLICY=transfer") == true)

        settings["LEDGER_API_KEY"] = "not-the-key"
        let refused = try await admin(["lookup-order", "ORDERLEDGR"], settings: settings)
        #expect(refused.status == 4, "the ledger could not be read")
        let first = try #require((refused.json["transactions"] as? [[String: Any]])?.first)
        #expect(((first["ledger"] as? [String: Any])?["error"] as? String)?.contains("401") == true)

        #expect(await ledger.stop() == 0)
        await harness.shutdown()
        await fake.stop()
    }

    /// Issue 41 item 9: `finish-transaction` finishes at Apple only a purchase the ledger delivered (Apple: "after
    /// it finishes providing the customer with the new content"), unless `--force`.
    @Test func finishTransactionFinishesOnlyWhatTheLedgerDelivered() async throws {
        let directory = NSTemporaryDirectory() + "receipt-admin-finish-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let minted = try FakePKIFiles.mint(into: directory)
        let fake = try await FakeAppStoreProcess.start(arguments: minted.fakeArguments)
        try await fake.registerTransactions([["id": "2000000000000901"], ["id": "2000000000000902"]])
        let harness = try await LedgerHarness.start()
        let ledger = try await harness.startLedger()
        // u-7's 100 gems are credited; the other purchase never reached the ledger.
        try await harness.produce(H.resultsTopic, key: "u-7", [
            F.result(
                submissionId: "s1", userId: "u-7",
                transactions: [
                    F.transaction(
                        creditKey: "2000000000000901", originalTransactionId: "2000000000000901",
                        transactionId: "2000000000000901", periodId: .some(nil))
                ])
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 1 })
        func finished(_ id: String) async throws -> Bool {
            let counters = try await TestHTTPClient.send("GET", fake.url + "/admin/server-api/counters?transaction=\(id)")
            return counters.jsonObject?["finished_production"] as? Bool == true
        }

        var settings = minted.verifierSettings.merging(fake.environment) { $1 }
        settings["ALLOWED_BUNDLE_IDS"] = "com.example.game"
        settings["LEDGER_URL"] = ledger.url("")
        settings["LEDGER_API_KEY"] = H.apiKey
        let credited = try await admin(["finish-transaction", "2000000000000901"], settings: settings)
        #expect(credited.status == 0, "\(credited.json)")
        #expect(credited.json["finished"] as? Bool == true)
        #expect(credited.json["credit_key"] as? String == "apple:production:2000000000000901")
        #expect((credited.json["ledger"] as? [String: Any])?["state"] as? String == "credited")
        #expect(try await finished("2000000000000901"))

        let undelivered = try await admin(["finish-transaction", "2000000000000902"], settings: settings)
        #expect(undelivered.status == 1, "\(undelivered.json)")
        #expect(undelivered.json["finished"] as? Bool == false)
        #expect((undelivered.json["ledger"] as? [String: Any])?["known"] as? Bool == false)
        #expect(try await !finished("2000000000000902"), "nothing was sent to Apple")

        let forced = try await admin(["finish-transaction", "2000000000000902", "--force"], settings: settings)
        #expect(forced.status == 0, "\(forced.json)")
        #expect(try await finished("2000000000000902"))

        // Apple does not know it (404 4040010): exit 1, as every not-found.
        settings["LEDGER_URL"] = nil
        settings["LEDGER_API_KEY"] = nil
        let unknown = try await admin(["finish-transaction", "2000000000000903", "--environment", "sandbox"], settings: settings)
        #expect(unknown.status == 1, "\(unknown.json)")

        #expect(await ledger.stop() == 0)
        await harness.shutdown()
        await fake.stop()
    }
}
