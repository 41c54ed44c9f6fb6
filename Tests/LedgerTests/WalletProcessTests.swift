import Foundation
import Postgres
import ServiceSupport
import Testing
import TestSupport

/// The wallet through the real `receipt-ledger` process and its HTTP API: 64 concurrent spenders of one user while a
/// refund arrives, ending exact; the loop a game runs (buy, spend, grant, history, refund); bad input refused with
/// nothing changed; routes on raw path segments.
@Suite("receipt-ledger wallet process", .serialized)
struct WalletProcessTests {
    typealias F = LedgerFixtures
    typealias H = LedgerHarness

    static let catalog = """
        {"products": {"com.example.gems100": {"type": "consumable", "credit": {"item": "gems", "amount": 100}},
                      "com.example.coins": {"type": "consumable", "credit": {"item": "coins", "amount": 10}},
                      "com.example.pro": {"type": "auto_renewable", "credit": {"entitlement": "pro"}}}}
        """

    static func start(_ settings: [String: String] = [:]) async throws -> (LedgerHarness, ServiceProcess, String) {
        let directory = NSTemporaryDirectory() + "wallet-process-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let catalog = directory + "/catalog.json"
        try Self.catalog.write(toFile: catalog, atomically: true, encoding: .utf8)
        let harness = try await LedgerHarness.start(settings: ["PRODUCT_CATALOG_FILE": catalog].merging(settings) { $1 })
        return (harness, try await harness.startLedger(), directory)
    }

    static func post(
        _ harness: LedgerHarness, _ ledger: ServiceProcess, _ path: String, key: String?, _ body: String,
        extraHeaders: [String: String] = [:]
    ) async throws -> TestHTTPResponse {
        var headers = ["Authorization": "Bearer \(H.apiKey)", "Content-Type": "application/json"]
        if let key { headers["Idempotency-Key"] = key }
        return try await TestHTTPClient.send(
            "POST", ledger.url(path), headers: headers.merging(extraHeaders) { $1 }, body: Data(body.utf8), timeout: 30)
    }

    static func database(_ harness: LedgerHarness) throws -> PostgresConnection {
        try PostgresConnection(connectionString: harness.postgres.connectionString())
    }

    /// Issue 40: many spends of one user at once never overdraw and never lose one. 64 spenders send 10 spends of
    /// one gem each (640) against 400 gems (three purchases and a grant) while a refund of one purchase arrives: every
    /// spend is answered 200 or 409, exactly as many succeed as the wallet could pay, and the database ends exact.
    @Test func sixtyFourConcurrentSpendersOfOneUserEndExact() async throws {
        let (harness, ledger, directory) = try await Self.start()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await harness.produce(H.resultsTopic, key: "u1", [
            F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "p1")]),
            F.result(submissionId: "s2", userId: "u1", transactions: [F.transaction(creditKey: "p2")]),
            F.result(submissionId: "s3", userId: "u1", transactions: [F.transaction(creditKey: "p3")]),
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 3 })
        let grant = try await Self.post(harness, ledger, "/v1/users/u1/grants", key: "g1", #"{"item":"gems","amount":100}"#)
        #expect(grant.status == 200)
        #expect(grant.jsonObject?["balance"] as? Int == 400)

        let statuses = Locked<[String: Int]>([:])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for spender in 0..<64 {
                group.addTask {
                    for spend in 0..<10 {
                        let key = "spend-\(spender)-\(spend)"
                        let response = try await Self.post(
                            harness, ledger, "/v1/users/u1/spends", key: key, #"{"item":"gems","amount":1}"#)
                        statuses.withLock { $0[key] = response.status }
                    }
                }
            }
            // A refund of p3 while they spend: the Kafka consumer's batch takes the wallet's lock too.
            group.addTask {
                try await harness.produce(
                    H.eventsTopic, key: "o", [F.event(eventId: "r1", type: "debit", transaction: F.transaction(creditKey: "p3"))])
            }
            try await group.waitForAll()
        }
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 4 })
        let answered = statuses.withLock { $0 }
        #expect(answered.count == 640)
        #expect(Set(answered.values).isSubset(of: [200, 409]), "every spend answered, none failed")
        let spent = Int64(answered.values.filter { $0 == 200 }.count)

        let database = try Self.database(harness)
        defer { database.close() }
        try database.expectWalletsConsistent()
        let row = try database.execute(
            """
            SELECT b.amount AS balance,
                (SELECT coalesce(sum(amount), 0) FROM wallet_spends WHERE user_id = 'u1') AS attributed,
                (SELECT count(*) FROM wallet_requests WHERE user_id = 'u1' AND operation = 'spend' AND status = 200) AS recorded,
                (SELECT coalesce(sum(t.amount), 0) FROM wallet_takes t WHERE t.user_id = 'u1') AS taken,
                b.unrecovered
            FROM balances b WHERE b.user_id = 'u1' AND b.item = 'gems'
            """
        ).rows[0]
        #expect(try row.int64("attributed") == spent)
        #expect(try row.int64("recorded") == spent)
        // 400 in; what was spent, what the refund took, and what is left add up to it.
        #expect(try row.int64("balance") + spent + row.int64("taken") == 400)
        #expect(try row.int64("taken") + row.int64("unrecovered") == 100, "the refund asked back 100")
        // Nothing was overdrawn: the wallet ran dry, so 640 spends could not all succeed.
        #expect(try row.int64("balance") == 0)
        let user = try #require(try await harness.get(ledger, "/v1/users/u1").jsonObject)
        #expect(user["balances"] as? [String: Int] == ["gems": 0])

        // Every key answers the same again (a sample: one per spender), marked as a replay.
        for spender in 0..<64 {
            let key = "spend-\(spender)-9"
            let again = try await Self.post(harness, ledger, "/v1/users/u1/spends", key: key, #"{"item":"gems","amount":1}"#)
            #expect(again.status == answered[key])
            #expect(again.header("Idempotent-Replayed") == "true")
        }
        #expect(await ledger.metricSum("ledger_wallet_requests_total", labels: [#"outcome="applied""#]) == Double(spent + 1))
        #expect(await ledger.stop() == 0)
        await harness.shutdown()
    }

    /// A game's loop through the API: buy (a verified result), spend, grant, read the wallet and the history in pages,
    /// a refund of a spent purchase, what the purchase says was consumed.
    @Test func buySpendGrantRefundAndTheHistory() async throws {
        let (harness, ledger, directory) = try await Self.start()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await harness.produce(H.resultsTopic, key: "u1", [
            F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "p1")]),
            F.result(submissionId: "s2", userId: "u1", transactions: [F.transaction(creditKey: "p2")]),
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 2 })
        let spend = try await Self.post(
            harness, ledger, "/v1/users/u1/spends", key: "\"k-1\"", #"{"item":"gems","amount":150,"reference":"sword"}"#)
        #expect(spend.status == 200)
        let body = try #require(spend.jsonObject)
        #expect(body["idempotency_key"] as? String == "k-1", "the IETF draft's quoted key is the key")
        #expect(body["balance"] as? Int == 50)
        #expect((body["attribution"] as? [[String: Any]])?.map { $0["amount"] as? Int } == [100, 50])
        let grant = try await Self.post(
            harness, ledger, "/v1/users/u1/grants", key: "g-1", #"{"item":"gems","amount":25,"reason":"daily reward"}"#)
        #expect(grant.jsonObject?["balance"] as? Int == 75)
        let sandboxGrant = try await Self.post(
            harness, ledger, "/v1/users/u1/grants", key: "g-2", #"{"item":"gems","amount":5,"book":"sandbox"}"#)
        #expect(sandboxGrant.jsonObject?["book"] as? String == "sandbox")

        let p1 = try #require(try await harness.get(ledger, "/v1/purchases/\(F.key("p1"))").jsonObject)
        #expect(p1["amount_consumed"] as? Int == 100 && p1["amount_remaining"] as? Int == 0)
        try await harness.produce(
            H.eventsTopic, key: "o", [F.event(eventId: "r1", type: "debit", transaction: F.transaction(creditKey: "p1"))])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 3 })
        let user = try #require(try await harness.get(ledger, "/v1/users/u1").jsonObject)
        #expect(user["balances"] as? [String: Int] == ["gems": 25])
        let wallet = try #require((user["wallet"] as? [String: [String: Int]])?["gems"])
        #expect(wallet == ["purchased": 0, "granted": 25, "debt": 0, "unrecovered": 50])
        #expect((user["sandbox"] as? [String: Any])?["balances"] as? [String: Int] == ["gems": 5])
        #expect(await ledger.metricSum("ledger_wallet_unrecovered_units_total") == 50)

        // The history, newest first, two entries a page, each page after the last one's cursor.
        var kinds: [String] = []
        var cursor: String?
        repeat {
            let query = cursor.map { "?limit=2&cursor=\($0)" } ?? "?limit=2"
            let page = try #require(try await harness.get(ledger, "/v1/users/u1/history\(query)").jsonObject)
            let entries = try #require(page["entries"] as? [[String: Any]])
            #expect(entries.count <= 2)
            kinds += entries.compactMap { $0["kind"] as? String }
            cursor = page["next_cursor"] as? String
        } while cursor != nil
        #expect(kinds == ["debit", "grant", "grant", "spend", "credit", "credit"])
        #expect(try await harness.get(ledger, "/v1/users/u1/history?cursor=nope").status == 400)
        #expect(try await harness.get(ledger, "/v1/users/u1/history?limit=0").status == 400)
        #expect(await ledger.stop() == 0)
        await harness.shutdown()
    }

    /// Bad input gets a clear 4xx and changes nothing.
    @Test func badInputIsRefusedAndChangesNothing() async throws {
        let (harness, ledger, directory) = try await Self.start()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try await Self.post(harness, ledger, "/v1/users/u1/grants", key: "g0", #"{"item":"gems","amount":100}"#).status == 200)
        let cases: [(path: String, key: String?, body: String, status: Int, code: String)] = [
            ("/v1/users/u1/spends", nil, #"{"item":"gems","amount":1}"#, 400, "idempotency_key_missing"),
            ("/v1/users/u1/spends", "", #"{"item":"gems","amount":1}"#, 400, "idempotency_key_missing"),
            ("/v1/users/u1/spends", String(repeating: "k", count: 256), #"{"item":"gems","amount":1}"#, 400, "invalid_idempotency_key"),
            ("/v1/users/u1/spends", "a\tb", #"{"item":"gems","amount":1}"#, 400, "invalid_idempotency_key"),
            ("/v1/users/u1/spends", "\"unterminated", #"{"item":"gems","amount":1}"#, 400, "invalid_idempotency_key"),
            ("/v1/users/u%01/spends", "k", #"{"item":"gems","amount":1}"#, 400, "invalid_identifier"),
            ("/v1/users/u%00x/grants", "k", #"{"item":"gems","amount":1}"#, 400, "invalid_identifier"),
            ("/v1/users/u1/spends", "k", #"{"item":"diamonds","amount":1}"#, 400, "unknown_item"),
            ("/v1/users/u1/spends", "k", #"{"item":"","amount":1}"#, 400, "invalid_item"),
            ("/v1/users/u1/spends", "k", #"{"amount":1}"#, 400, "invalid_item"),
            ("/v1/users/u1/spends", "k", #"{"item":"gems","amount":0}"#, 400, "invalid_amount"),
            ("/v1/users/u1/spends", "k", #"{"item":"gems","amount":-5}"#, 400, "invalid_amount"),
            ("/v1/users/u1/spends", "k", #"{"item":"gems","amount":1.5}"#, 400, "invalid_amount"),
            ("/v1/users/u1/spends", "k", #"{"item":"gems","amount":1.0}"#, 400, "invalid_amount"),
            ("/v1/users/u1/spends", "k", #"{"item":"gems","amount":1e2}"#, 400, "invalid_amount"),
            ("/v1/users/u1/spends", "k", #"{"item":"gems","amount":"10"}"#, 400, "invalid_amount"),
            ("/v1/users/u1/grants", "k", #"{"item":"gems","amount":9223372036854775808}"#, 400, "invalid_amount"),
            ("/v1/users/u1/spends", "k", #"{"item":"gems"}"#, 400, "invalid_amount"),
            ("/v1/users/u1/spends", "k", #"{"item":"gems","amount":1,"book":"other"}"#, 400, "invalid_book"),
            ("/v1/users/u1/spends", "k", #"{"item":"gems","amount":1,"reason":"x"}"#, 400, "invalid_request"),
            ("/v1/users/u1/grants", "k", #"{"item":"gems","amount":1,"reference":"x"}"#, 400, "invalid_request"),
            ("/v1/users/u1/spends", "k", #"{"item":"gems","amount":1,"reference":"a\u0000b"}"#, 400, "invalid_reference"),
            ("/v1/users/u1/spends", "k", #"{"item":"gems","amount":1,"item":"gems"}"#, 400, "invalid_json"),
            ("/v1/users/u1/spends", "k", "not json", 400, "invalid_json"),
            ("/v1/users/u1/spends", "k", "[1]", 400, "invalid_request"),
            // A grant the balance cannot hold: nothing granted, the key still unused.
            ("/v1/users/u1/grants", "big", #"{"item":"gems","amount":9223372036854775807}"#, 422, "amount_overflow"),
        ]
        for (path, key, body, status, code) in cases {
            let response = try await Self.post(harness, ledger, path, key: key, body)
            #expect(response.status == status, "\(body) \(key ?? "no key")")
            #expect((response.jsonObject?["error"] as? [String: Any])?["code"] as? String == code, "\(body)")
        }
        #expect(try await harness.send(ledger, "GET", "/v1/users/u1/spends").status == 405)
        #expect(try await TestHTTPClient.send("POST", ledger.url("/v1/users/u1/spends"), body: Data()).status == 401)
        let database = try Self.database(harness)
        defer { database.close() }
        #expect(try database.execute("SELECT count(*) FROM wallet_requests").rows[0].int64(0) == 1)
        #expect(try harness.balances(item: "gems") == ["u1": 100])
        #expect(try await Self.post(harness, ledger, "/v1/users/u1/grants", key: "big", #"{"item":"gems","amount":1}"#).status == 200)
        // Requests the router refuses (a user id with a control character) never reach the wallet's count.
        let invalid = cases.filter { $0.status == 400 && !$0.path.contains("%0") }.count
        #expect(await ledger.metricSum("ledger_wallet_requests_total", labels: [#"outcome="invalid""#]) == Double(invalid))
        #expect(await ledger.stop() == 0)
        await harness.shutdown()
    }

    /// Routes split the path as sent: an encoded '/' belongs to the user id, a control character in any parameter is
    /// 400 (a NUL never cuts a key short).
    @Test func pathParametersAreReadAsSent() async throws {
        let (harness, ledger, directory) = try await Self.start()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await harness.produce(H.resultsTopic, key: "u1", [
            F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "p1")])
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 1 })
        #expect(try await harness.get(ledger, "/v1/purchases/\(F.key("p1"))").status == 200)
        let truncated = try await harness.get(ledger, "/v1/purchases/\(F.key("p1"))%00junk")
        #expect(truncated.status == 400)
        #expect((truncated.jsonObject?["error"] as? [String: Any])?["code"] as? String == "invalid_identifier")
        #expect(try await harness.get(ledger, "/v1/consumption-requests/e%00").status == 400)
        let slashed = try await Self.post(harness, ledger, "/v1/users/a%2Fconsent/grants", key: "g", #"{"item":"gems","amount":3}"#)
        #expect(slashed.jsonObject?["user_id"] as? String == "a/consent")
        let user = try #require(try await harness.get(ledger, "/v1/users/a%2Fconsent").jsonObject)
        #expect(user["user_id"] as? String == "a/consent" && user["balances"] as? [String: Int] == ["gems": 3])
        #expect(try await harness.send(ledger, "PUT", "/v1/users/a/consent").jsonObject?["user_id"] as? String == "a")
        #expect(try await harness.get(ledger, "/v1/users/a/b").status == 404)
        #expect(await ledger.stop() == 0)
        await harness.shutdown()
    }
}
