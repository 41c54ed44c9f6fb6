import FakeAppStore
import Foundation
import Testing
import TestSupport

/// `receipt-admin` as a process against the real `fake-appstore`: every subcommand, Apple's error codes as exit
/// codes, a 429 waited out, the `--json` shape, dry runs that send nothing, and the audit lines.
@Suite("receipt-admin process", .serialized)
struct ReceiptAdminProcessTests {
    typealias H = AdminProcessHarness

    @Test func lookupOrderListsTheOrdersVerifiedTransactionsWithTheirCreditKeys() async throws {
        let harness = try await H.start()
        try await harness.register([
            ["id": "2000000000000101", "order_id": "MK5TTTVWJH", "product_id": "gems_100", "type": "Consumable"],
            H.subscription("2000000000000102", extra: ["order_id": "MK5TTTVWJH"]),
            ["id": "2000000000000103", "order_id": "OTHERORDER"],
        ])
        let run = try await harness.admin(["lookup-order", "MK5TTTVWJH", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let json = try run.json
        #expect(json["command"] as? String == "lookup-order" && json["outcome"] as? String == "ok")
        #expect(json["order_status"] as? Int == 0 && json["environment"] as? String == "Production")
        let transactions = try #require(json["transactions"] as? [[String: Any]])
        #expect(Set(transactions.compactMap { $0["credit_key"] as? String }) == [
            "apple:production:2000000000000101", "apple:production:period:7000000000000102",
        ])
        #expect(transactions.allSatisfy { $0["ledger"] == nil }, "no ledger configured")
        let audit = run.audit
        #expect(audit.count == 1)
        #expect(audit.first?["endpoint"] as? String == "order_lookup" && audit.first?["http_status"] as? Int == 200)
        #expect(audit.first?["attempt"] as? Int == 1 && audit.first?["duration_ms"] is Int)
        #expect(!run.stderr.joined().contains("eyJ"), "no signed data and no token on stderr")

        let text = try await harness.admin(["lookup-order", "MK5TTTVWJH"])
        #expect(text.status == 0 && text.text.contains("credit_key apple:production:2000000000000101"))
        let unknown = try await harness.admin(["lookup-order", "NOSUCHORDER", "--json"])
        #expect(unknown.status == 1)
        #expect(unknown.object["order_status"] as? Int == 1 && (unknown.object["outcome"] as? String) == "not_found")
        let sandbox = try await harness.admin(["lookup-order", "MK5TTTVWJH", "--environment", "sandbox"])
        #expect(sandbox.status == 1, "the order is production's")
    }

    @Test func answersThatDoNotChainToTheTrustedRootsExitFive() async throws {
        let harness = try await H.start()
        try await harness.register([["id": "2000000000000111", "order_id": "FORGEDORDR"]])
        let other = try FakePKIFiles.mint(into: harness.directory + "/other-pki")
        let run = try await harness.admin(
            ["lookup-order", "FORGEDORDR", "--json"],
            settings: ["APPLE_ROOT_CERTIFICATES": other.path(FakePKIFiles.rootFile)])
        #expect(run.status == 5)
        #expect(run.object["outcome"] as? String == "unverified")
        let wrongApp = try await harness.admin(["lookup-order", "FORGEDORDR", "--bundle-id", "com.example.other"])
        #expect(wrongApp.status == 1, "another app's order is not found (the token's bid is the app asked about)")
    }

    @Test func signedAnswersAreCheckedForRevocationLikeTheVerifiers() async throws {
        let harness = try await H.start()
        try await harness.register([["id": "2000000000000121", "order_id": "OCSPORDER1"]])
        // The fake's responder answers: the answer is good, and the tool asked about its chain.
        let checked = try await harness.admin(["lookup-order", "OCSPORDER1", "--json"])
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(try await harness.fake.ocspRequests() >= 1, "receipt-admin did not ask the OCSP responder")
        // No usable answer: Apple's answer is not judged, exit 4 (try again), never 5 or a report of it.
        try await harness.fake.setOCSP(mode: "fail")
        let down = try await harness.admin(["lookup-order", "OCSPORDER1", "--json"])
        #expect(down.status == 4, "\(down.stdout) \(down.stderr)")
        #expect(down.object["outcome"] as? String == "unavailable")
        #expect((down.object["message"] as? String ?? down.text).contains("could not be verified now"))
        #expect(down.object["transactions"] == nil, "nothing of an unjudged answer is reported")
        // A revoked signing certificate: the answer did not verify, exit 5.
        try await harness.fake.setOCSP(mode: "answer", revoked: ["leaf"])
        let revoked = try await harness.admin(["lookup-order", "OCSPORDER1", "--json"])
        #expect(revoked.status == 5, "\(revoked.stdout) \(revoked.stderr)")
        #expect(revoked.object["outcome"] as? String == "unverified")
        // APPLE_REVOCATION_CHECK=off (air-gapped): no check, the answer is reported.
        let off = try await harness.admin(
            ["lookup-order", "OCSPORDER1", "--json"], settings: ["APPLE_REVOCATION_CHECK": "off"])
        #expect(off.status == 0, "\(off.stderr)")
    }

    @Test func subscriptionStatusGroupsTheCustomersSubscriptionsByStatus() async throws {
        let harness = try await H.start()
        try await harness.register([
            H.subscription("2000000000000201", extra: ["customer": "c1"]),
            H.subscription("2000000000000202", product: "yearly", expiresInDays: -3, extra: ["customer": "c1"]),
            ["id": "2000000000000203", "type": "Consumable", "customer": "c2"],
        ])
        let run = try await harness.admin(["subscription-status", "2000000000000201", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let groups = try #require(run.object["subscription_groups"] as? [[String: Any]])
        let subscriptions = groups.flatMap { $0["subscriptions"] as? [[String: Any]] ?? [] }
        #expect(Set(subscriptions.compactMap { $0["status_name"] as? String }) == ["active", "expired"])
        let active = try #require(subscriptions.first { $0["status"] as? Int == 1 })
        #expect((active["transaction"] as? [String: Any])?["product_id"] as? String == "monthly")
        #expect((active["renewal"] as? [String: Any])?["auto_renew_status"] as? Int == 1)

        let onlyActive = try await harness.admin(["subscription-status", "2000000000000202", "--status", "1", "--json"])
        #expect(onlyActive.status == 0)
        let filtered = try #require(onlyActive.object["subscription_groups"] as? [[String: Any]])
        #expect(filtered.flatMap { $0["subscriptions"] as? [[String: Any]] ?? [] }.count == 1)

        #expect(try await harness.admin(["subscription-status", "2000000000000203"]).status == 1, "no subscription")
        let invalid = try await harness.admin(["subscription-status", "not-a-transaction", "--json"])
        #expect(invalid.status == 3)
        #expect(invalid.errorCode == 4_000_006)
        let elsewhere = try await harness.admin(["subscription-status", "2000000000000201", "--environment", "sandbox",
                                                 "--json"])
        #expect(elsewhere.status == 1)
        #expect(elsewhere.errorCode == 4_040_010)
        #expect(try await harness.admin(["subscription-status", "2000000000000201", "--status", "9"]).status == 2)
    }

    @Test func refundHistoryReadsEveryPageAndWaitsOutA429() async throws {
        let harness = try await H.start()
        var refunds: [[String: Any]] = (0..<23).map { index in
            ["id": "20000000000003\(String(format: "%02d", index))", "customer": "c3",
             "revocation_date_ms": 1_767_225_600_000 + index * 1_000, "revocation_reason": 1]
        }
        refunds.append(["id": "2000000000000399", "customer": "c3"])
        refunds[0]["failures"] = [["http_status": 429, "error_code": 4_290_000, "retry_after": "1", "times": 1]]
        try await harness.register(refunds)
        let run = try await harness.admin(["refund-history", "2000000000000300", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let json = try run.json
        #expect((json["refunds"] as? [[String: Any]])?.count == 23 && json["pages"] as? Int == 2)
        #expect(json["complete"] as? Bool == true)
        let audit = run.audit
        #expect(audit.map { $0["http_status"] as? Int } == [429, 200, 200], "\(audit)")
        #expect(audit.map { $0["attempt"] as? Int } == [1, 2, 1])
        #expect(audit.first?["outcome"] as? String == "rate_limited")
        #expect((audit.first?["retry_in_ms"] as? Int ?? 0) >= 1_000, "Retry-After: 1 second")

        try await harness.register([["id": "2000000000000398", "customer": "c4"]])
        #expect(try await harness.admin(["refund-history", "2000000000000398"]).status == 1, "no refund")
    }

    @Test func setAccountTokenRepairsOwnershipAtApple() async throws {
        let harness = try await H.start()
        try await harness.register([
            ["id": "2000000000000401"],
            ["id": "2000000000000402", "original_id": "2000000000000401"],
            ["id": "2000000000000403", "ownership": "FAMILY_SHARED"],
        ])
        let token = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        let run = try await harness.admin(["set-account-token", "2000000000000401", token.uppercased(), "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.object["set"] as? Bool == true && (run.object["app_account_token"] as? String) == token)
        #expect(try await harness.currentPayload("2000000000000401")["appAccountToken"] as? String == token)
        #expect(try await harness.currentPayload("2000000000000402")["appAccountToken"] as? String == token)
        #expect(run.audit.first?["endpoint"] as? String == "set_app_account_token")
        #expect(!run.stderr.joined().contains(token), "the token is not in the audit")

        let notOriginal = try await harness.admin(["set-account-token", "2000000000000402", token, "--json"])
        #expect(notOriginal.status == 3)
        #expect(notOriginal.errorCode == 4_000_187)
        let family = try await harness.admin(["set-account-token", "2000000000000403", token, "--json"])
        #expect(family.status == 3 && family.errorCode == 4_000_185)
        let calls = try await harness.endpointCalls()["set_app_account_token"]
        let badToken = try await harness.admin(["set-account-token", "2000000000000401", "not-a-uuid"])
        #expect(badToken.status == 2)
        #expect(try await harness.endpointCalls()["set_app_account_token"] == calls, "refused before sending")
    }

    @Test func extendRenewalExtendsOnceThenHonoursApplesLimits() async throws {
        let harness = try await H.start()
        try await harness.register([
            H.subscription("2000000000000501"),
            H.subscription("2000000000000502", expiresInDays: -1),
            ["id": "2000000000000503", "type": "Consumable"],
        ])
        let before = try #require(try await harness.currentPayload("2000000000000501")["expiresDate"] as? Int)
        let extend = { (id: String, requestId: String, extra: [String]) in
            try await harness.admin(
                ["extend-renewal", id, "--days", "5", "--reason", "3", "--request-id", requestId, "--json"] + extra)
        }

        let dry = try await extend("2000000000000501", "outage-1", ["--dry-run"])
        #expect(dry.status == 0)
        let body = try #require((dry.object["request"] as? [String: Any])?["body"] as? [String: Any])
        #expect(body["extendByDays"] as? Int == 5 && body["requestIdentifier"] as? String == "outage-1")
        #expect(try await harness.endpointCalls()["extend_renewal"] == nil, "a dry run sends nothing")
        #expect(dry.audit.isEmpty)

        let first = try await extend("2000000000000501", "outage-1", [])
        #expect(first.status == 0, "\(first.stderr)")
        let effective = try #require(first.object["effective_date_ms"] as? Int)
        #expect(effective == before + 5 * H.dayMs)
        #expect(try await harness.currentPayload("2000000000000501")["expiresDate"] as? Int == effective)
        let again = try await extend("2000000000000501", "outage-1", [])
        #expect(again.status == 0 && (again.object["effective_date_ms"] as? Int) == effective, "same request")
        #expect(try await harness.currentPayload("2000000000000501")["expiresDate"] as? Int == effective)

        #expect(try await extend("2000000000000501", "outage-2", []).status == 0)
        let third = try await extend("2000000000000501", "outage-3", [])
        #expect(third.status == 3 && third.errorCode == 4_030_005)
        let expired = try await extend("2000000000000502", "outage-1", [])
        #expect(expired.status == 3 && expired.errorCode == 4_030_004)
        let consumable = try await extend("2000000000000503", "outage-1", [])
        #expect(consumable.status == 3)
        let elsewhere = try await extend("2000000000000501", "outage-1", ["--environment", "sandbox"])
        #expect(elsewhere.status == 1)
        #expect(elsewhere.errorCode == 4_040_005)
        let tooLong = try await harness.admin(
            ["extend-renewal", "2000000000000501", "--days", "91", "--reason", "3", "--request-id", "r"])
        #expect(tooLong.status == 2 && tooLong.stderr.joined().contains("1 to 90"))
    }

    @Test func massExtendExtendsEveryActiveSubscriberAndReportsItsStatus() async throws {
        let harness = try await H.start()
        try await harness.register([
            H.subscription("2000000000000601"), H.subscription("2000000000000602"),
            H.subscription("2000000000000603", extra: ["ownership": "FAMILY_SHARED"]),
            H.subscription("2000000000000604", expiresInDays: -2),
            H.subscription("2000000000000605", product: "yearly"),
        ])
        let before = try #require(try await harness.currentPayload("2000000000000601")["expiresDate"] as? Int)
        let dry = try await harness.admin(
            ["mass-extend", "--product", "monthly", "--days", "3", "--reason", "3", "--dry-run", "--json"])
        #expect(dry.status == 0)
        #expect((dry.object["request"] as? [String: Any])?["path"] as? String == "/inApps/v1/subscriptions/extend/mass")
        #expect(try await harness.endpointCalls()["extend_renewal"] == nil, "a dry run sends nothing")

        let run = try await harness.admin(
            ["mass-extend", "--product", "monthly", "--days", "3", "--reason", "3", "--request-id", "mass-1", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.object["request_identifier"] as? String == "mass-1")
        #expect(try await harness.currentPayload("2000000000000601")["expiresDate"] as? Int == before + 3 * H.dayMs)
        let status = try await harness.admin(["mass-extend-status", "monthly", "mass-1", "--json"])
        #expect(status.status == 0)
        let json = try status.json
        #expect(json["complete"] as? Bool == true)
        #expect(json["succeeded_count"] as? Int == 2 && json["failed_count"] as? Int == 1)

        let elsewhere = try await harness.admin(
            ["mass-extend", "--product", "yearly", "--days", "3", "--reason", "1", "--storefront", "CAN",
             "--request-id", "mass-2"])
        #expect(elsewhere.status == 0)
        let none = try await harness.admin(["mass-extend-status", "yearly", "mass-2", "--json"])
        #expect(none.object["succeeded_count"] as? Int == 0, "no subscriber in Canada")
        let unknown = try await harness.admin(["mass-extend-status", "monthly", "no-such-request", "--json"])
        #expect(unknown.status == 1)
        #expect(unknown.errorCode == 4_040_009)
    }

    @Test func testNotificationReportsWhetherApplesTestReachedTheNotificationURL() async throws {
        let harness = try await H.start()
        let missing = try await harness.admin(["test-notification", "--json"])
        #expect(missing.status == 3)
        #expect(missing.errorCode == 4_040_007)

        // The fake's own Get Notification History entry endpoint takes Apple's POST body and answers 200.
        let receiver = harness.fake.url + "/admin/notification-history"
        let set = try await TestHTTPClient.send(
            "POST", harness.fake.url + "/admin/notification-url?url="
                + (receiver.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? receiver))
        #expect(set.status == 200)
        let delivered = try await harness.admin(["test-notification", "--json", "--wait-seconds", "20"])
        #expect(delivered.status == 0, "\(delivered.stdout) \(delivered.stderr)")
        let json = try delivered.json
        #expect(json["delivered"] as? Bool == true && json["notification_type"] as? String == "TEST")
        #expect((json["notification_uuid"] as? String)?.isEmpty == false)
        #expect((json["send_attempts"] as? [[String: Any]])?.first?["result"] as? String == "SUCCESS")
        #expect(delivered.audit.first?["endpoint"] as? String == "test_notification")
        #expect(delivered.audit.first?["method"] as? String == "POST")

        _ = try await TestHTTPClient.send(
            "POST", harness.fake.url + "/admin/notification-url?url=http%3A%2F%2F127.0.0.1%3A9%2Fnowhere")
        let undelivered = try await harness.admin(["test-notification", "--json", "--wait-seconds", "20"])
        #expect(undelivered.status == 1)
        #expect(undelivered.object["delivered"] as? Bool == false)
        let attempts = undelivered.object["send_attempts"] as? [[String: Any]]
        #expect(attempts?.first?["result"] as? String == "SOCKET_ISSUE")
    }

    @Test func anOutageExitsFourAfterRetryingAndAWrongKeyExitsThree() async throws {
        let harness = try await H.start()
        try await harness.fake.setOutage(true)
        let down = try await harness.admin(["refund-history", "2000000000000701", "--json", "--deadline-seconds", "3"])
        #expect(down.status == 4)
        #expect(down.object["outcome"] as? String == "unavailable")
        #expect(down.audit.count >= 2 && down.audit.allSatisfy { $0["http_status"] as? Int == 503 })
        #expect(down.audit.last?["retry_in_ms"] is NSNull && down.audit.first?["retry_in_ms"] is Int)
        try await harness.fake.setOutage(false)

        let other = try FakePKIFiles.mint(into: harness.directory + "/other-key")
        let refused = try await harness.admin(
            ["refund-history", "2000000000000701", "--json"],
            settings: ["APPLE_PRIVATE_KEY_FILE": other.path(FakePKIFiles.apiKeyFile)])
        #expect(refused.status == 3)
        #expect(refused.httpStatus == 401)
    }

    @Test func missingSettingsAreExitTwoAndSendNothing() async throws {
        let harness = try await H.start()
        let run = try await harness.admin(["lookup-order", "X", "--json"], settings: ["APPLE_KEY_ID": ""])
        #expect(run.status == 2)
        #expect(run.object["outcome"] as? String == "usage")
        let twoApps = try await harness.admin(["lookup-order", "X"], settings: ["ALLOWED_BUNDLE_IDS": "a.b,c.d"])
        #expect(twoApps.status == 2 && twoApps.text.contains("--bundle-id"))
        #expect(try await harness.endpointCalls().isEmpty)
    }
}
