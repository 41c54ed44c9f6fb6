import FakeAppStore
import Foundation
import Postgres
import ServiceSupport
import Testing
import TestSupport

/// The refund responder in `receipt-ledger` as a process, over embedded-kafka, a PostgreSQL of its own and the real
/// `fake-appstore` (which validates Send Consumption Information bodies as Apple documents them): a consented
/// request answered once with the ledger's facts; a request without consent not sent; Apple's 429 and 5xx retried
/// and answered; Apple's 4xx recorded and not retried; a redelivered event answered no second time; a request past
/// its 12 hours counted late.
@Suite("refund responder process", .serialized)
struct ConsumptionResponderProcessTests {
    typealias F = LedgerFixtures
    typealias H = LedgerHarness

    static let policy = """
        {"sample_content_provided": false,
         "rules": [{"when": {"delivered": false}, "preference": "GRANT_FULL"},
                   {"when": {"delivered": true, "consumed_above_percent": 80}, "preference": "DECLINE"}]}
        """

    @Test func consumptionRequestsAreAnsweredOnceFromTheLedgersFacts() async throws {
        let directory = NSTemporaryDirectory() + "consumption-responder-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let minted = try FakePKIFiles.mint(into: directory)
        let policyPath = directory + "/refund-policy.json"
        try Self.policy.write(toFile: policyPath, atomically: true, encoding: .utf8)
        let fake = try await FakeAppStoreProcess.start(arguments: minted.fakeArguments)
        let gems = { (label: String) in
            ["id": label + "-t", "bundle_id": "com.example.app", "type": "Consumable"] as [String: Any]
        }
        var busy = gems("busy")
        busy["failures"] = [
            ["http_status": 429, "error_code": 4_290_000, "retry_after": "1", "times": 1],
            ["http_status": 500, "error_code": 5_000_001, "times": 1],
        ]
        try await fake.registerTransactions([gems("spent"), busy, gems("other"), gems("late")])

        var settings = minted.verifierSettings.merging(fake.environment) { $1 }
        settings["LEDGER_CONSUMPTION_RESPONSES"] = "send"
        settings["LEDGER_CONSUMPTION_POLICY_FILE"] = policyPath
        settings["LEDGER_CONSUMPTION_RETRY_BASE_MS"] = "200"
        let harness = try await LedgerHarness.start(settings: settings)
        let ledger = try await harness.startLedger()

        // u1 owns two packs of 100 gems and spent all of the first and 90 of the second (spends are attributed first
        // in, first out); u2 owns one and never consented.
        let spend = { (key: String, amount: Int) in
            try await TestHTTPClient.send(
                "POST", ledger.url("/v1/users/u1/spends"),
                headers: ["Authorization": "Bearer \(H.apiKey)", "Idempotency-Key": key],
                body: Data(#"{"item":"gems","amount":\#(amount)}"#.utf8))
        }
        try await harness.produce(H.resultsTopic, key: "u1", [
            F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "spent")]),
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 1 })
        #expect(try await spend("k1", 100).status == 200)
        try await harness.produce(H.resultsTopic, key: "u1", [
            F.result(submissionId: "s2", userId: "u1", transactions: [F.transaction(creditKey: "busy")]),
        ])
        try await harness.produce(H.resultsTopic, key: "u2", [
            F.result(submissionId: "s3", userId: "u2", transactions: [F.transaction(creditKey: "other")]),
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 3 })
        #expect(try await spend("k2", 90).status == 200)
        let consent = try await harness.send(ledger, "PUT", "/v1/users/u1/consent")
        #expect(consent.status == 200)
        #expect(consent.jsonObject?["consented"] as? Bool == true)

        let now = SystemTime.wallMilliseconds()
        let thirteenHoursAgo = now - 13 * 3_600_000
        try await harness.produce(H.eventsTopic, key: "o", [
            F.event(eventId: "spent-request", type: "consumption_request", transaction: F.transaction(creditKey: "spent"), signedDateMs: now),
            F.event(eventId: "busy-request", type: "consumption_request", transaction: F.transaction(creditKey: "busy"), signedDateMs: now),
            F.event(eventId: "other-request", type: "consumption_request", transaction: F.transaction(creditKey: "other"), signedDateMs: now),
            F.event(eventId: "late-request", type: "consumption_request", transaction: F.transaction(creditKey: "late"), signedDateMs: thirteenHoursAgo),
        ])
        // Finished: recorded (200; a request the ledger has not read yet is a 404) and no longer pending.
        let finished: @Sendable (String) async -> [String: Any]? = { eventId in
            guard let response = try? await harness.send(ledger, "GET", "/v1/consumption-requests/\(eventId)"),
                response.status == 200, let audit = response.jsonObject, audit["status"] as? String != "pending"
            else { return nil }
            return audit
        }
        #expect(await eventually(timeout: .seconds(30)) {
            for id in ["spent-request", "busy-request", "other-request", "late-request"] where await finished(id) == nil {
                return false
            }
            return true
        })

        // Consented, all of the first pack spent: declined by the second rule, sent once.
        let spent = try #require(await finished("spent-request"))
        #expect(spent["status"] as? String == "answered")
        #expect(spent["owner"] as? String == "u1")
        #expect(spent["rule"] as? Int == 1)
        #expect(spent["apple_status"] as? Int == 202)
        let facts = try #require(spent["facts"] as? [String: Any])
        #expect(facts["delivery_status"] as? String == "DELIVERED")
        // Each pack is consumed as far as spends were attributed to it: the first all of it.
        #expect(facts["consumption_percentage"] as? Int == 100_000)
        let spentAnswers = try await fake.consumptionAnswers(transaction: "spent-t")
        #expect(spentAnswers.count == 1)
        for body in [try #require(spent["body"] as? [String: Any]), try #require(spentAnswers.first)] {
            #expect(Set(body.keys) == ["customerConsented", "sampleContentProvided", "deliveryStatus", "consumptionPercentage", "refundPreference"])
            #expect(body["customerConsented"] as? Bool == true)
            #expect(body["sampleContentProvided"] as? Bool == false)
            #expect(body["deliveryStatus"] as? String == "DELIVERED")
            #expect(body["consumptionPercentage"] as? Int == 100_000)
            #expect(body["refundPreference"] as? String == "DECLINE")
        }

        // Apple answered 429, then 500 (retryable): three requests reached Apple, one answer was taken. (A try the
        // pacer holds back after the 429 reaches no one but counts as an attempt.)
        let busyAudit = try #require(await finished("busy-request"))
        #expect(busyAudit["status"] as? String == "answered")
        // The second pack: the 90 of it spent.
        #expect((busyAudit["facts"] as? [String: Any])?["consumption_percentage"] as? Int == 90_000)
        #expect((busyAudit["attempts"] as? Int ?? 0) >= 3)
        #expect(try await fake.consumptionAnswers(transaction: "busy-t").count == 1)
        #expect(try await fake.serverAPICalls(transaction: "busy-t").production == 3)

        // No consent: nothing sent. Past the deadline: nothing sent, counted late.
        let other = try #require(await finished("other-request"))
        #expect(other["status"] as? String == "unanswered")
        #expect(other["unanswered_reason"] as? String == "no_consent")
        #expect(other["body"] is NSNull)
        #expect(try await fake.consumptionAnswers(transaction: "other-t").isEmpty)
        let late = try #require(await finished("late-request"))
        #expect(late["unanswered_reason"] as? String == "deadline_passed")
        #expect(try await fake.consumptionAnswers(transaction: "late-t").isEmpty)

        // Apple sent the same notification again (redelivered event): recorded once, answered no second time.
        try await harness.produce(H.eventsTopic, key: "o", [
            F.event(eventId: "spent-request", type: "consumption_request", transaction: F.transaction(creditKey: "spent"), signedDateMs: now),
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 8 })
        #expect(try await fake.consumptionAnswers(transaction: "spent-t").count == 1)
        #expect(try harness.count("SELECT count(*) FROM consumption_requests WHERE status = 'pending'") == 0)

        #expect(await ledger.metricSum("ledger_consumption_requests_total", labels: [#"outcome="recorded""#]) == 4)
        #expect(await ledger.metricSum("ledger_consumption_requests_total", labels: [#"outcome="answered""#]) == 2)
        #expect(await ledger.metricSum("ledger_consumption_unanswered_total", labels: [#"reason="deadline_passed""#]) == 1)
        #expect(await ledger.metricSum("ledger_consumption_unanswered_total", labels: [#"reason="no_consent""#]) == 1)
        #expect((await ledger.metricSum("ledger_consumption_send_retries_total") ?? 0) >= 2)

        // The withdrawal is recorded (and kept: the audit tells when).
        let withdrawn = try await harness.send(ledger, "DELETE", "/v1/users/u1/consent")
        #expect(withdrawn.jsonObject?["consented"] as? Bool == false)
        #expect(try await harness.send(ledger, "POST", "/v1/users/u1/consent").status == 405)
        #expect(try await harness.send(ledger, "PUT", "/v1/users/u%0B1/consent").status == 400)
        #expect(try await harness.send(ledger, "PUT", "/v1/users/u1/consent", key: nil).status == 401)
        #expect(try await harness.send(ledger, "GET", "/v1/consumption-requests/never").status == 404)

        #expect(await ledger.stop() == 0)
        await harness.shutdown()
        _ = await fake.process.terminate()
    }

    /// Apple refuses the answer with a 4xx (here: the fake's 4000043, the transaction is neither a consumable nor a
    /// subscription): the refusal and Apple's words are recorded, and the answer is not sent again.
    @Test func appleRefusingAnAnswerIsRecordedAndNotRetried() async throws {
        let directory = NSTemporaryDirectory() + "consumption-refused-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let minted = try FakePKIFiles.mint(into: directory)
        let fake = try await FakeAppStoreProcess.start(arguments: minted.fakeArguments)
        try await fake.registerTransactions([["id": "lifetime-t", "bundle_id": "com.example.app", "type": "Non-Consumable"]])
        var settings = minted.verifierSettings.merging(fake.environment) { $1 }
        settings["LEDGER_CONSUMPTION_RESPONSES"] = "send"
        settings["LEDGER_CONSUMPTION_RETRY_BASE_MS"] = "200"
        let harness = try await LedgerHarness.start(settings: settings)
        let ledger = try await harness.startLedger()
        try await harness.produce(H.resultsTopic, key: "u1", [
            F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "lifetime")]),
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 1 })
        #expect(try await harness.send(ledger, "PUT", "/v1/users/u1/consent").status == 200)
        try await harness.produce(H.eventsTopic, key: "o", [
            F.event(
                eventId: "lifetime-request", type: "consumption_request",
                transaction: F.transaction(creditKey: "lifetime"), signedDateMs: SystemTime.wallMilliseconds()),
        ])
        #expect(await eventually(timeout: .seconds(30)) {
            (try? await harness.send(ledger, "GET", "/v1/consumption-requests/lifetime-request"))?.jsonObject?["status"]
                as? String == "refused"
        })
        let audit = try #require(try await harness.send(ledger, "GET", "/v1/consumption-requests/lifetime-request").jsonObject)
        #expect(audit["apple_status"] as? Int == 400)
        #expect((audit["apple_error"] as? String)?.contains("4000043") == true)
        #expect(audit["attempts"] as? Int == 1)
        #expect(audit["finished_at_ms"] is Int)
        #expect(await ledger.metricSum("ledger_consumption_requests_total", labels: [#"outcome="refused""#]) == 1)
        // Several retry intervals later Apple was still asked once and holds no answer.
        try await Task.sleep(for: .seconds(2))
        #expect(try await fake.serverAPICalls(transaction: "lifetime-t").production == 1)
        #expect(try await fake.consumptionAnswers(transaction: "lifetime-t").isEmpty)
        #expect(try harness.count("SELECT count(*) FROM consumption_requests WHERE status = 'pending'") == 0)
        #expect(await ledger.stop() == 0)
        await harness.shutdown()
        _ = await fake.process.terminate()
    }

    @Test func aDryRunRecordsTheAnswerAndSendsNothing() async throws {
        let fake = try await FakeAppStoreProcess.start()
        try await fake.registerTransactions([["id": "dry-t", "bundle_id": "com.example.app"]])
        let harness = try await LedgerHarness.start(settings: ["LEDGER_CONSUMPTION_RESPONSES": "dry-run"])
        let ledger = try await harness.startLedger()
        try await harness.produce(H.resultsTopic, key: "u1", [
            F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "dry")]),
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 1 })
        #expect(try await harness.send(ledger, "PUT", "/v1/users/u1/consent").status == 200)
        try await harness.produce(H.eventsTopic, key: "o", [
            F.event(
                eventId: "dry-request", type: "consumption_request", transaction: F.transaction(creditKey: "dry"),
                signedDateMs: SystemTime.wallMilliseconds()),
        ])
        #expect(await eventually(timeout: .seconds(30)) {
            (try? await harness.send(ledger, "GET", "/v1/consumption-requests/dry-request"))?.jsonObject?["status"]
                as? String == "dry_run"
        })
        let audit = try #require(try await harness.send(ledger, "GET", "/v1/consumption-requests/dry-request").jsonObject)
        // Nothing spent: 0% consumed, no rule (no policy file): the facts without a preference.
        let body = try #require(audit["body"] as? [String: Any])
        #expect(body["consumptionPercentage"] as? Int == 0)
        #expect(body["refundPreference"] == nil)
        #expect(body["customerConsented"] as? Bool == true)
        #expect(try await fake.consumptionAnswers(transaction: "dry-t").isEmpty)
        #expect(await ledger.stop() == 0)
        await harness.shutdown()
        _ = await fake.process.terminate()
    }
}
