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

/// Issue 41 item 4: after Set App Account Token, renewals carry a token no user is linked to and wait for ever;
/// `set-account-token --user` tells the ledger whose the token is once Apple accepted it, and the waiting renewal is
/// credited. Also the declaration API's answers through the real ledger process.
@Suite("receipt-admin declares a token to the ledger", .serialized)
struct ReceiptAdminTokenDeclarationProcessTests {
    typealias F = LedgerFixtures
    typealias H = LedgerHarness

    @Test func setAccountTokenWithUserResolvesTheRenewalsWaitingForTheNewToken() async throws {
        let directory = NSTemporaryDirectory() + "receipt-admin-declare-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let minted = try FakePKIFiles.mint(into: directory)
        let fake = try await FakeAppStoreProcess.start(arguments: minted.fakeArguments)
        let now = Int(Date().timeIntervalSince1970 * 1000)
        try await fake.registerTransactions([
            ["id": "2000000000000901", "type": "Auto-Renewable Subscription", "product_id": "monthly",
             "web_order_line_item_id": "7000000000000901", "purchase_date_ms": now - 40 * 86_400_000,
             "expires_date_ms": now - 10 * 86_400_000],
        ])
        let harness = try await LedgerHarness.start()
        let ledger = try await harness.startLedger()
        let oldToken = "aaaaaaaa-0000-4000-8000-000000000901"
        let newToken = "7e3fb20b-4cdb-47cc-936d-99d65f608901"
        func period(_ label: String, _ token: String) -> [String: Any] {
            F.transaction(creditKey: label, originalTransactionId: "2000000000000901", productId: "monthly",
                          credit: F.pro, appAccountToken: token)
        }
        // u-old subscribed; support moved the subscription to u-new at Apple, and the next renewal carries the new
        // token: no result ever linked it, so it waits.
        try await harness.produce(H.resultsTopic, key: "u-old", [
            F.result(submissionId: "s1", userId: "u-old", transactions: [period("7000000000000901", oldToken)])
        ])
        try await harness.produce(H.eventsTopic, key: "2000000000000901", [
            F.event(eventId: "renewal-902", type: "credit", transaction: period("7000000000000902", newToken))
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 2 })
        let waiting = try await harness.get(ledger, "/v1/purchases/" + F.key("7000000000000902"))
        #expect(waiting.jsonObject?["state"] as? String == "pending_owner")

        // The declaration API refuses what is not a declaration, before anything is written.
        let path = "/v1/users/u-new/app-account-token"
        #expect(try await harness.put(ledger, path, body: "not json").status == 400)
        let notUUID = try await harness.put(ledger, path, body: #"{"app_account_token":"7e3fb20b"}"#)
        #expect(notUUID.status == 400)
        #expect((notUUID.jsonObject?["error"] as? [String: Any])?["code"] as? String == "invalid_app_account_token")
        #expect(try await harness.put(ledger, path, body: #"{"app_account_token":5}"#).status == 400)
        #expect(try await harness.put(ledger, "/v1/users/u%0Bnew/app-account-token", body: "{}").status == 400)
        #expect(try await harness.put(ledger, path, body: "{}", key: nil).status == 401)
        let get = try await harness.send(ledger, "GET", path)
        #expect(get.status == 405)
        #expect(get.header("allow") == "PUT")
        #expect(try await harness.send(ledger, "DELETE", path).status == 405)
        #expect(try harness.count("SELECT count(*) FROM declared_account_tokens") == 0)

        var settings = minted.verifierSettings.merging(fake.environment) { $1 }
        settings["ALLOWED_BUNDLE_IDS"] = "com.example.game"
        let run = { (arguments: [String], environment: [String: String]) async throws -> (status: Int32, json: [String: Any]) in
            let tool = try await ToolRun.run(
                try TestBinaries.path("receipt-admin"), arguments: arguments + ["--json"], environment: environment)
            return (tool.status, try #require(tool.lastJSONObject, "\(tool.stdout) \(tool.stderr)"))
        }
        // --user needs the ledger: refused before Apple is called.
        let noLedger = try await run(["set-account-token", "2000000000000901", newToken, "--user", "u-new"], settings)
        #expect(noLedger.status == 2)
        #expect(((noLedger.json["error"] as? [String: Any])?["message"] as? String)?.contains("--user") == true)
        settings["LEDGER_API_KEY"] = H.apiKey

        let declared = try await run([
            "set-account-token", "2000000000000901", newToken.uppercased(), "--user", "u-new",
            "--ledger-url", ledger.url(""),
        ], settings)
        #expect(declared.status == 0, "\(declared.json)")
        let answer = try #require(declared.json["ledger_declaration"] as? [String: Any])
        #expect(answer["user_id"] as? String == "u-new")
        #expect(answer["resolved_claims"] as? Int == 1)
        let credited = try await harness.get(ledger, "/v1/purchases/" + F.key("7000000000000902"))
        #expect(credited.jsonObject?["state"] as? String == "credited")
        #expect(credited.jsonObject?["owner"] as? String == "u-new")
        let user = try await harness.get(ledger, "/v1/users/u-new")
        #expect((user.jsonObject?["entitlements"] as? [[String: Any]])?.count == 1)

        // The same command again: Apple's part and the ledger's are idempotent.
        settings["LEDGER_URL"] = ledger.url("")
        let again = try await run(["set-account-token", "2000000000000901", newToken, "--user", "u-new"], settings)
        #expect(again.status == 0, "\(again.json)")
        #expect((again.json["ledger_declaration"] as? [String: Any])?["resolved_claims"] as? Int == 0)
        // Declared for u-new: the ledger refuses it for anyone else (Apple took the token; the ledger did not).
        let taken = try await run(["set-account-token", "2000000000000901", newToken, "--user", "u-other"], settings)
        #expect(taken.status == 3, "\(taken.json)")
        #expect((taken.json["ledger_declaration"] as? [String: Any])?["conflict"] as? Bool == true)
        let conflict = try await harness.put(ledger, "/v1/users/u-other/app-account-token",
                                             body: #"{"app_account_token":"\#(newToken)"}"#)
        #expect(conflict.status == 409)
        #expect((conflict.jsonObject?["error"] as? [String: Any])?["code"] as? String == "app_account_token_declared")
        #expect(await ledger.metricSum("ledger_token_declarations_total", labels: [#"outcome="conflict""#]) == 2)
        #expect(await ledger.metricSum("ledger_token_declarations_total", labels: [#"outcome="declared""#]) == 1)

        #expect(await ledger.stop() == 0)
        await harness.shutdown()
        await fake.stop()
    }
}

extension LedgerHarness {
    /// `PUT` with a JSON body on the ledger's API, with the test key unless `key` says otherwise.
    func put(_ ledger: ServiceProcess, _ path: String, body: String, key: String? = apiKey) async throws
        -> TestHTTPResponse
    {
        var headers = ["Content-Type": "application/json"]
        if let key { headers["Authorization"] = "Bearer \(key)" }
        return try await TestHTTPClient.send("PUT", ledger.url(path), headers: headers, body: Data(body.utf8), timeout: 5)
    }
}
