import FakeAppStore
import Foundation
import Postgres
import ServiceSupport
import Testing
import TestSupport

/// The refund responder in `receipt-ledger` as a process, over embedded-kafka, a PostgreSQL of its own and the real
/// `fake-appstore` (which validates Send Consumption Information bodies as Apple documents them, per product type):
/// a consented request answered once with the ledger's facts; a request without consent not sent; Apple's 429 and
/// 5xx retried and answered, attempts counting only what reached Apple; each product type answered as Apple takes
/// it; Apple's 4xx recorded with its code, counted and not retried; a policy Apple would refuse stopping the ledger
/// at start; a redelivered event answered no second time; a request past its 12 hours counted late; a request for
/// a family-shared transaction (which Apple refuses to take any answer for, 4000185) not sent.
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
        var family = gems("family")
        family["type"] = "Non-Consumable"
        family["family_shared"] = true
        try await fake.registerTransactions([gems("spent"), busy, gems("other"), gems("late"), family])

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
        // A family member's share of u1's family organizer's purchase: an entitlement for u1, who consents below.
        try await harness.produce(H.resultsTopic, key: "u1", [
            F.result(submissionId: "s4", userId: "u1", transactions: [
                F.transaction(
                    creditKey: "family", credit: ["entitlement": "pro"], ownership: "FAMILY_SHARED",
                    productType: "non_consumable"),
            ]),
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 4 })
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
            F.event(
                eventId: "family-request", type: "consumption_request",
                transaction: F.transaction(
                    creditKey: "family", credit: ["entitlement": "pro"], ownership: "FAMILY_SHARED",
                    productType: "non_consumable"),
                signedDateMs: now),
        ])
        // Finished: recorded (200; a request the ledger has not read yet is a 404) and no longer pending.
        let finished: @Sendable (String) async -> [String: Any]? = { eventId in
            guard let response = try? await harness.send(ledger, "GET", "/v1/consumption-requests/\(eventId)"),
                response.status == 200, let audit = response.jsonObject, audit["status"] as? String != "pending"
            else { return nil }
            return audit
        }
        #expect(await eventually(timeout: .seconds(30)) {
            for id in ["spent-request", "busy-request", "other-request", "late-request", "family-request"]
            where await finished(id) == nil {
                return false
            }
            return true
        })

        // Consented, all of the first pack spent: declined by the second rule, sent once.
        // Requested with busy-request, answered after it: the try made while busy's 429 held the endpoint back
        // reached no one and is no attempt; Apple received exactly the attempts counted.
        let spent = try #require(await finished("spent-request"))
        #expect(spent["status"] as? String == "answered")
        #expect(spent["owner"] as? String == "u1")
        #expect(spent["rule"] as? Int == 1)
        #expect(spent["apple_status"] as? Int == 202)
        #expect(spent["attempts"] as? Int == 1)
        #expect(try await fake.serverAPICalls(transaction: "spent-t").production == 1)
        #expect(spent["product_type"] as? String == "consumable")
        #expect(spent["consumption_request_reason"] is NSNull, "an event without a reason is taken")
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

        // Apple answered 429, then 500 (retryable): three requests reached Apple, one answer was taken, and the
        // audit counts those three (a try the client held back while the 429's hold lasted reached no one).
        let busyAudit = try #require(await finished("busy-request"))
        #expect(busyAudit["status"] as? String == "answered")
        // The second pack: the 90 of it spent.
        #expect((busyAudit["facts"] as? [String: Any])?["consumption_percentage"] as? Int == 90_000)
        #expect(busyAudit["attempts"] as? Int == 3)
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
        // Family-shared: owned and consented, but Apple refuses any answer for it (4000185): none is sent.
        let familyAudit = try #require(await finished("family-request"))
        #expect(familyAudit["status"] as? String == "unanswered")
        #expect(familyAudit["unanswered_reason"] as? String == "family_shared")
        #expect(familyAudit["in_app_ownership_type"] as? String == "FAMILY_SHARED")
        #expect(familyAudit["owner"] as? String == "u1")
        #expect(familyAudit["attempts"] as? Int == 0)
        #expect(try await fake.serverAPICalls(transaction: "family-t").production == 0)
        #expect(try await fake.consumptionAnswers(transaction: "family-t").isEmpty)
        #expect(spent["in_app_ownership_type"] as? String == "PURCHASED")

        // Apple sent the same notification again (redelivered event): recorded once, answered no second time.
        try await harness.produce(H.eventsTopic, key: "o", [
            F.event(eventId: "spent-request", type: "consumption_request", transaction: F.transaction(creditKey: "spent"), signedDateMs: now),
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 10 })
        #expect(try await fake.consumptionAnswers(transaction: "spent-t").count == 1)
        #expect(try harness.count("SELECT count(*) FROM consumption_requests WHERE status = 'pending'") == 0)

        #expect(await ledger.metricSum("ledger_consumption_requests_total", labels: [#"outcome="recorded""#]) == 5)
        #expect(await ledger.metricSum("ledger_consumption_requests_total", labels: [#"outcome="answered""#]) == 2)
        #expect(await ledger.metricSum("ledger_consumption_unanswered_total", labels: [#"reason="deadline_passed""#]) == 1)
        #expect(await ledger.metricSum("ledger_consumption_unanswered_total", labels: [#"reason="no_consent""#]) == 1)
        #expect(await ledger.metricSum("ledger_consumption_unanswered_total", labels: [#"reason="family_shared""#]) == 1)
        #expect(await ledger.metricSum("ledger_consumption_requests_total", labels: [#"outcome="refused""#]) == 0)
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

    /// Apple refuses an answer (a body it does not take: the ledger was told the purchase is a consumable, Apple
    /// knows an auto-renewable subscription, so the body carries a consumptionPercentage): the refusal is recorded
    /// with Apple's errorCode, counted by it (what the LedgerConsumptionAnswersRefused alert watches), and the
    /// answer is not sent again.
    @Test func appleRefusingAnAnswerIsRecordedWithItsCodeAndCounted() async throws {
        let directory = NSTemporaryDirectory() + "consumption-refused-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let minted = try FakePKIFiles.mint(into: directory)
        let fake = try await FakeAppStoreProcess.start(arguments: minted.fakeArguments)
        try await fake.registerTransactions([
            ["id": "mislabelled-t", "bundle_id": "com.example.app", "type": "Auto-Renewable Subscription"],
        ])
        var settings = minted.verifierSettings.merging(fake.environment) { $1 }
        settings["LEDGER_CONSUMPTION_RESPONSES"] = "send"
        settings["LEDGER_CONSUMPTION_RETRY_BASE_MS"] = "200"
        let harness = try await LedgerHarness.start(settings: settings)
        let ledger = try await harness.startLedger()
        try await harness.produce(H.resultsTopic, key: "u1", [
            F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "mislabelled")]),
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 1 })
        #expect(try await harness.send(ledger, "PUT", "/v1/users/u1/consent").status == 200)
        try await harness.produce(H.eventsTopic, key: "o", [
            F.event(
                eventId: "mislabelled-request", type: "consumption_request",
                transaction: F.transaction(creditKey: "mislabelled"), signedDateMs: SystemTime.wallMilliseconds(),
                consumptionRequestReason: "UNSATISFIED_WITH_PURCHASE"),
        ])
        #expect(await eventually(timeout: .seconds(30)) {
            (try? await harness.send(ledger, "GET", "/v1/consumption-requests/mislabelled-request"))?.jsonObject?["status"]
                as? String == "refused"
        })
        let audit = try #require(try await harness.send(ledger, "GET", "/v1/consumption-requests/mislabelled-request").jsonObject)
        #expect(audit["apple_status"] as? Int == 400)
        #expect(audit["apple_error_code"] as? Int == 4_000_209)
        #expect((audit["apple_error"] as? String)?.contains("4000209") == true)
        #expect(audit["attempts"] as? Int == 1)
        #expect(audit["finished_at_ms"] is Int)
        #expect(audit["product_type"] as? String == "consumable")
        #expect(audit["consumption_request_reason"] as? String == "UNSATISFIED_WITH_PURCHASE")
        #expect((audit["body"] as? [String: Any])?["consumptionPercentage"] as? Int == 0)
        #expect(await ledger.metricSum("ledger_consumption_requests_total", labels: [#"outcome="refused""#]) == 1)
        #expect(await ledger.metricSum("ledger_consumption_answers_refused_total", labels: [#"error_code="4000209""#]) == 1)
        #expect(await ledger.metricSum("ledger_consumption_answers_refused_total", labels: [#"error_code="other""#]) == 0)
        // Several retry intervals later Apple was still asked once and holds no answer.
        try await Task.sleep(for: .seconds(2))
        #expect(try await fake.serverAPICalls(transaction: "mislabelled-t").production == 1)
        #expect(try await fake.consumptionAnswers(transaction: "mislabelled-t").isEmpty)
        #expect(try harness.count("SELECT count(*) FROM consumption_requests WHERE status = 'pending'") == 0)
        #expect(await ledger.stop() == 0)
        await harness.shutdown()
        _ = await fake.process.terminate()
    }

    /// A game's purchases of each kind, answered with the shipped dev policy (scripts/dev-refund-policy.json) and
    /// accepted by the fake App Store, which checks every body by Apple's rules for the transaction's product type:
    /// a consumable nobody spent (0 %: refunded in full, never GRANT_PRORATED, which Apple refuses at 0 %), a
    /// non-consumable (no share known: the facts, no preference), an auto-renewable subscription (GRANT_PRORATED
    /// without a consumptionPercentage: Apple computes it). Apple's reason is kept where the event carries one.
    @Test func eachProductTypeIsAnsweredAsAppleTakesIt() async throws {
        let directory = NSTemporaryDirectory() + "consumption-kinds-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let minted = try FakePKIFiles.mint(into: directory)
        let fake = try await FakeAppStoreProcess.start(arguments: minted.fakeArguments)
        try await fake.registerTransactions([
            ["id": "gems-t", "bundle_id": "com.example.app", "type": "Consumable"],
            ["id": "levels-t", "bundle_id": "com.example.app", "type": "Non-Consumable"],
            ["id": "vip-t", "bundle_id": "com.example.app", "type": "Auto-Renewable Subscription"],
        ])
        var settings = minted.verifierSettings.merging(fake.environment) { $1 }
        settings["LEDGER_CONSUMPTION_RESPONSES"] = "send"
        settings["LEDGER_CONSUMPTION_POLICY_FILE"] = LedgerSettingsTests.root
            .appendingPathComponent("scripts/dev-refund-policy.json").path
        let harness = try await LedgerHarness.start(settings: settings)
        let ledger = try await harness.startLedger()

        let now = SystemTime.wallMilliseconds()
        let gems = F.transaction(creditKey: "gems")
        let levels = F.transaction(creditKey: "levels", credit: ["entitlement": "levels"], productType: "non_consumable")
        let vip = F.transaction(
            creditKey: "vip", credit: F.pro, expiresDateMs: now + 20 * 86_400_000, purchaseDateMs: now - 10 * 86_400_000,
            productType: "auto_renewable")
        try await harness.produce(H.resultsTopic, key: "u1", [
            F.result(submissionId: "s1", userId: "u1", transactions: [gems, levels, vip]),
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 1 })
        #expect(try await harness.send(ledger, "PUT", "/v1/users/u1/consent").status == 200)

        try await harness.produce(H.eventsTopic, key: "o", [
            F.event(eventId: "gems-request", type: "consumption_request", transaction: gems, signedDateMs: now,
                    consumptionRequestReason: "UNINTENDED_PURCHASE"),
            F.event(eventId: "levels-request", type: "consumption_request", transaction: levels, signedDateMs: now),
            F.event(eventId: "vip-request", type: "consumption_request", transaction: vip, signedDateMs: now,
                    consumptionRequestReason: "UNSATISFIED_WITH_PURCHASE"),
        ])
        let finished: @Sendable (String) async -> [String: Any]? = { eventId in
            guard let response = try? await harness.send(ledger, "GET", "/v1/consumption-requests/\(eventId)"),
                response.status == 200, let audit = response.jsonObject, audit["status"] as? String != "pending"
            else { return nil }
            return audit
        }
        let ids = ["gems-request", "levels-request", "vip-request"]
        #expect(await eventually(timeout: .seconds(30)) {
            for id in ids where await finished(id) == nil { return false }
            return true
        })
        // (event, transaction at the fake, product type, the body's members beyond the three always sent)
        let expected: [(String, String, String, [String: AnyHashable])] = [
            ("gems-request", "gems-t", "consumable", ["consumptionPercentage": 0, "refundPreference": "GRANT_FULL"]),
            ("levels-request", "levels-t", "non_consumable", [:]),
            ("vip-request", "vip-t", "auto_renewable", ["refundPreference": "GRANT_PRORATED"]),
        ]
        for (eventId, transactionId, productType, members) in expected {
            let audit = try #require(await finished(eventId))
            #expect(audit["status"] as? String == "answered", "\(eventId): \(audit)")
            #expect(audit["apple_status"] as? Int == 202, "\(eventId)")
            #expect(audit["apple_error_code"] is NSNull, "\(eventId)")
            #expect(audit["attempts"] as? Int == 1, "\(eventId)")
            #expect(audit["product_type"] as? String == productType, "\(eventId)")
            let accepted = try await fake.consumptionAnswers(transaction: transactionId)
            #expect(accepted.count == 1, "\(eventId)")
            for body in [try #require(audit["body"] as? [String: Any]), try #require(accepted.first)] {
                #expect(Set(body.keys) == Set(["customerConsented", "sampleContentProvided", "deliveryStatus"]).union(members.keys), "\(eventId): \(body)")
                #expect(body["customerConsented"] as? Bool == true)
                for (member, value) in members {
                    #expect((body[member] as? AnyHashable) == value, "\(eventId).\(member)")
                }
            }
        }
        #expect(try #require(await finished("gems-request"))["consumption_request_reason"] as? String == "UNINTENDED_PURCHASE")
        #expect(try #require(await finished("vip-request"))["consumption_request_reason"] as? String == "UNSATISFIED_WITH_PURCHASE")
        #expect(await ledger.metricSum("ledger_consumption_requests_total", labels: [#"outcome="answered""#]) == 3)
        #expect(await ledger.metricSum("ledger_consumption_answers_refused_total") == 0)
        #expect(await ledger.stop() == 0)
        await harness.shutdown()
        _ = await fake.process.terminate()
    }

    /// A policy with a rule that can give a body Apple refuses (the dev policy before round 5: GRANT_PRORATED at
    /// most 10 % consumed, so also at 0 %) stops the ledger at start: exit 2, the rule named by its position.
    @Test func aPolicyAppleWouldRefuseStopsTheLedgerAtStart() async throws {
        let directory = NSTemporaryDirectory() + "consumption-policy-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let policyPath = directory + "/refund-policy.json"
        try """
            {"rules": [{"when": {"delivered": false}, "preference": "GRANT_FULL"},
                       {"when": {"delivered": true, "consumed_above_percent": 80}, "preference": "DECLINE"},
                       {"when": {"consumed_at_most_percent": 10}, "preference": "GRANT_PRORATED"}]}
            """.write(toFile: policyPath, atomically: true, encoding: .utf8)
        let run = try await ToolRun.run(
            try TestBinaries.path("receipt-ledger"), arguments: [],
            environment: LedgerSettingsTests.minimal.merging([
                "LEDGER_CONSUMPTION_RESPONSES": "dry-run", "LEDGER_CONSUMPTION_POLICY_FILE": policyPath,
            ]) { $1 },
            timeout: .seconds(30))
        #expect(run.status == 2)
        let said = run.stdout + run.stderr
        #expect(said.contains("LEDGER_CONSUMPTION_POLICY_FILE"), "\(said)")
        #expect(said.contains("rules[2] gives GRANT_PRORATED where Apple refuses it"), "\(said)")
    }

    /// Two requests due together, the first answered 429 (Retry-After 2 s): the client holds the endpoint back, so
    /// the second's first try reaches no one. `attempts` counts what Apple received: 2 for the first (the 429,
    /// then the answer), 1 for the second, as the fake counted them.
    @Test func attemptsCountOnlyRequestsAppleReceived() async throws {
        let directory = NSTemporaryDirectory() + "consumption-attempts-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let minted = try FakePKIFiles.mint(into: directory)
        let fake = try await FakeAppStoreProcess.start(arguments: minted.fakeArguments)
        try await fake.registerTransactions([
            ["id": "first-t", "bundle_id": "com.example.app", "type": "Consumable",
             "failures": [["http_status": 429, "error_code": 4_290_000, "retry_after": "2", "times": 1]]],
            ["id": "second-t", "bundle_id": "com.example.app", "type": "Consumable"],
        ])
        var settings = minted.verifierSettings.merging(fake.environment) { $1 }
        settings["LEDGER_CONSUMPTION_RESPONSES"] = "send"
        settings["LEDGER_CONSUMPTION_RETRY_BASE_MS"] = "200"
        let harness = try await LedgerHarness.start(settings: settings)
        let ledger = try await harness.startLedger()
        try await harness.produce(H.resultsTopic, key: "u1", [
            F.result(
                submissionId: "s1", userId: "u1",
                transactions: [F.transaction(creditKey: "first"), F.transaction(creditKey: "second")]),
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 1 })
        #expect(try await harness.send(ledger, "PUT", "/v1/users/u1/consent").status == 200)
        // Recorded in one statement, as one batch of events records them, so the responder claims both at once
        // (the first's deadline is the earlier: it goes first).
        let now = SystemTime.wallMilliseconds()
        try harness.execute(
            """
            INSERT INTO consumption_requests (event_id, credit_key, transaction_id, environment, bundle_id,
                signed_at_ms, deadline_ms, recorded_at_ms, status, next_attempt_at_ms, product_type)
            VALUES ('first-request', '\(F.key("first"))', 'first-t', 'Production', 'com.example.app', \(now),
                    \(now + 43_199_000), \(now), 'pending', \(now), 'consumable'),
                   ('second-request', '\(F.key("second"))', 'second-t', 'Production', 'com.example.app', \(now),
                    \(now + 43_200_000), \(now), 'pending', \(now), 'consumable')
            """)
        let answered: @Sendable (String) async -> [String: Any]? = { eventId in
            guard let audit = try? await harness.send(ledger, "GET", "/v1/consumption-requests/\(eventId)").jsonObject,
                audit["status"] as? String == "answered"
            else { return nil }
            return audit
        }
        #expect(await eventually(timeout: .seconds(30)) {
            let first = await answered("first-request")
            let second = await answered("second-request")
            return first != nil && second != nil
        })
        let first = try #require(await answered("first-request"))
        let second = try #require(await answered("second-request"))
        #expect(try await fake.serverAPICalls(transaction: "first-t").production == 2)
        #expect(first["attempts"] as? Int == 2)
        #expect(try await fake.serverAPICalls(transaction: "second-t").production == 1)
        #expect(second["attempts"] as? Int == 1)
        #expect((await ledger.metricSum("ledger_consumption_send_retries_total") ?? 0) >= 2, "both waited once")
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
