@testable import Admin
import AppStoreServerAPI
import Foundation
import ReceiptModel
import Testing

/// What the subcommands print (summary and `--json`), and the exit codes Apple's answers map to.
@Suite struct AdminReportTests {
    private func object(_ report: AdminReport) throws -> [String: Any] {
        let line = report.rendered(json: true)
        #expect(line.hasSuffix("\n") && line.filter { $0 == "\n" }.count == 1, "one line of JSON")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func appleErrorsMapToTheDocumentedExitCodes() {
        let cases: [(ServerAPIError.Kind, Int?, Int?, AdminExitCode)] = [
            (.notFound, 404, 4_040_010, .notFound),
            (.notFound, 404, 4_040_005, .notFound),
            (.invalidRequest, 404, 4_040_009, .notFound),
            (.invalidRequest, 404, 4_040_008, .notFound),
            (.invalidTransactionId, 400, 4_000_006, .refused),
            (.invalidRequest, 400, 4_000_009, .refused),
            (.invalidRequest, 403, 4_030_004, .refused),
            (.invalidRequest, 404, 4_040_007, .refused),
            (.unauthorized, 401, nil, .refused),
            (.rateLimited, 429, 4_290_000, .unavailable),
            (.retryable, 503, nil, .unavailable),
            (.retryable, nil, nil, .unavailable),
        ]
        for (kind, status, code, expected) in cases {
            let error = ServerAPIError(kind, "test", environment: .production, httpStatus: status, errorCode: code)
            #expect(AdminExitCode.of(error) == expected, "\(kind) \(String(describing: code))")
        }
        #expect(AdminExitCode.allCases.map(\.rawValue) == [0, 1, 2, 3, 4, 5])
    }

    @Test func aFailureReportNamesTheErrorInBothForms() throws {
        let report = AdminReport.failure(
            "refund-history", .refused, message: "production refund_history: HTTP 400, errorCode 4000006",
            httpStatus: 400, errorCode: 4_000_006, fields: ["transaction_id": .string("x")])
        let json = try object(report)
        #expect(json["command"] as? String == "refund-history")
        #expect(json["exit_code"] as? Int == 3 && json["outcome"] as? String == "refused")
        #expect(json["transaction_id"] as? String == "x")
        let error = try #require(json["error"] as? [String: Any])
        #expect(error["http_status"] as? Int == 400 && error["error_code"] as? Int == 4_000_006)
        #expect(report.rendered(json: false).contains("[errorCode 4000006]"))
    }

    @Test func anOrderListsEachTransactionWithItsCreditKeyAndTheLedgersView() throws {
        let gems = TransactionFacts(
            transactionId: "2000000000000010", originalTransactionId: "2000000000000010", productId: "gems_100",
            productType: "Consumable", purchaseDateMs: 1_767_225_600_000, environment: .production)
        let period = TransactionFacts(
            transactionId: "2000000000000011", originalTransactionId: "2000000000000009",
            webOrderLineItemId: "2000000000000777", productId: "monthly", productType: "Auto-Renewable Subscription",
            purchaseDateMs: 1_767_225_600_000, expiresDateMs: 1_769_904_000_000, revocationDateMs: 1_768_000_000_000,
            revocationReason: 1, revocationType: "REFUND_FULL", environment: .production)
        #expect(gems.creditKey == "apple:production:2000000000000010")
        #expect(period.creditKey == "apple:production:period:2000000000000777", "PurchaseIdentity's rule")

        let withLedger = LookupOrder.report(
            orderId: "MK5TTTVWJH", environment: .production, orderStatus: 0, transactions: [gems, period],
            ledger: [
                gems.creditKey: .found(owner: "u-981", state: "credited", amountCredited: 100, amountDebited: 0),
                period.creditKey: .unknown,
            ])
        #expect(withLedger.exitCode == .ok)
        let json = try object(withLedger)
        let items = try #require(json["transactions"] as? [[String: Any]])
        #expect(items.count == 2)
        #expect(items[0]["credit_key"] as? String == gems.creditKey)
        #expect((items[0]["ledger"] as? [String: Any])?["owner"] as? String == "u-981")
        #expect((items[1]["ledger"] as? [String: Any])?["known"] as? Bool == false)
        #expect(items[1]["revoked"] as? Bool == true && items[1]["revocation_type"] as? String == "REFUND_FULL")
        let text = withLedger.rendered(json: false)
        #expect(text.contains("credit_key apple:production:period:2000000000000777"))
        #expect(text.contains("ledger: credited, owner u-981"))
        #expect(text.contains("revoked 2026-01-09T"))

        let ledgerDown = LookupOrder.report(
            orderId: "MK5TTTVWJH", environment: .production, orderStatus: 0, transactions: [gems],
            ledger: [gems.creditKey: .failed("cannot reach the ledger")])
        #expect(ledgerDown.exitCode == .unavailable)
        let unknownOrder = LookupOrder.report(
            orderId: "NOPE", environment: .production, orderStatus: 1, transactions: [], ledger: nil)
        #expect(unknownOrder.exitCode == .notFound)
        #expect(try object(unknownOrder)["order_status"] as? Int == 1)
    }

    @Test func aDryRunShowsTheRequestThatWouldBeSent() throws {
        let request = ExtendRenewalDateRequest(extendByDays: 7, extendReasonCode: 3, requestIdentifier: "outage-1")
        let report = RenewalExtensions.dryRun(
            "extend-renewal", method: .put, path: RenewalExtensions.extendPath("2000000000000004"),
            environment: .production, body: RequestBody.json(request), fields: [:])
        #expect(report.exitCode == .ok)
        let json = try object(report)
        #expect(json["dry_run"] as? Bool == true)
        let shown = try #require(json["request"] as? [String: Any])
        #expect(shown["method"] as? String == "PUT")
        #expect(shown["path"] as? String == "/inApps/v1/subscriptions/extend/2000000000000004")
        let body = try #require(shown["body"] as? [String: Any])
        #expect(body["extendByDays"] as? Int == 7 && body["extendReasonCode"] as? Int == 3)
        #expect(body["requestIdentifier"] as? String == "outage-1")
    }

    @Test func theAuditLineHoldsTheCallAndNothingOfItsContents() throws {
        let entry = AuditEntry(
            endpoint: .refundHistory, method: .get, environment: .sandbox, attempt: 2, httpStatus: 429,
            errorCode: 4_290_000, outcome: "rate_limited", durationMs: 12, retryInMs: 1_050)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(entry.line.utf8)) as? [String: Any])
        #expect(json["audit"] as? String == "app_store_server_api")
        #expect(json["endpoint"] as? String == "refund_history" && json["method"] as? String == "GET")
        #expect(json["environment"] as? String == "Sandbox" && json["attempt"] as? Int == 2)
        #expect(json["http_status"] as? Int == 429 && json["error_code"] as? Int == 4_290_000)
        #expect(json["duration_ms"] as? Int == 12 && json["retry_in_ms"] as? Int == 1_050)
        #expect(Set(json.keys) == [
            "audit", "endpoint", "method", "environment", "attempt", "http_status", "error_code", "outcome",
            "duration_ms", "retry_in_ms",
        ])
    }

    @Test func subscriptionsRefundsAndTestNotificationsSayWhenNothingMatched() throws {
        let period = TransactionFacts(
            transactionId: "2000000000000021", originalTransactionId: "2000000000000020",
            webOrderLineItemId: "2000000000000888", productId: "monthly", productType: "Auto-Renewable Subscription",
            purchaseDateMs: 1_767_225_600_000, expiresDateMs: 1_769_904_000_000, environment: .sandbox)
        let renewal = RenewalFacts(autoRenewProductId: "monthly", autoRenewStatus: 1, renewalDateMs: 1_769_904_000_000)
        let active = SubscriptionStatus.report(
            transactionId: "2000000000000021", environment: .sandbox,
            groups: [
                .init(identifier: "21000001", subscriptions: [
                    .init(status: 1, originalTransactionId: "2000000000000020", transaction: period, renewal: renewal)
                ])
            ])
        #expect(active.exitCode == .ok)
        let groups = try #require(try object(active)["subscription_groups"] as? [[String: Any]])
        let subscription = try #require((groups.first?["subscriptions"] as? [[String: Any]])?.first)
        #expect(subscription["status_name"] as? String == "active")
        #expect((subscription["transaction"] as? [String: Any])?["credit_key"] as? String
            == "apple:sandbox:period:2000000000000888")
        #expect((subscription["renewal"] as? [String: Any])?["auto_renew_status"] as? Int == 1)
        #expect(active.rendered(json: false).contains("auto-renew on (monthly)"))
        let none = SubscriptionStatus.report(transactionId: "1", environment: .production, groups: [])
        #expect(none.exitCode == .notFound && none.rendered(json: false).contains("no subscription"))

        let noRefund = RefundHistory.report(
            transactionId: "1", environment: .production, refunds: [], pages: 1, complete: true)
        #expect(noRefund.exitCode == .notFound)
        #expect(try object(noRefund)["refunds"] as? [Any] != nil)

        let attempts = try JSONDecoder().decode(
            [SendAttempt].self,
            from: Data(#"[{"attemptDate":1767225600000,"sendAttemptResult":"SOCKET_ISSUE"}]"#.utf8))
        let failed = TestNotification.report(
            token: "t", environment: .production, attempts: attempts, notificationUUID: "u", notificationType: "TEST",
            waitSeconds: 30)
        #expect(failed.exitCode == .notFound)
        #expect(try object(failed)["delivered"] as? Bool == false)
        #expect(failed.rendered(json: false).contains("SOCKET_ISSUE"))
        // Issue 41 item 6: Apple's own Get Test Notification Status answer (its library's test data: attempts under
        // `sendAttempts`, the second a SUCCESS) through the client's answer type: delivered, exit 0.
        let apples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(
                "AppStoreTests/Fixtures/apple-app-store-server-library/models/getTestNotificationStatusResponse.json")
        let answer = try JSONDecoder().decode(CheckTestNotificationResponse.self, from: Data(contentsOf: apples))
        let delivered = TestNotification.report(
            token: "t", environment: .production, attempts: answer.sendAttempts, notificationUUID: "u",
            notificationType: "TEST", waitSeconds: 30)
        #expect(delivered.exitCode == .ok)
        #expect(try object(delivered)["delivered"] as? Bool == true)
        #expect((try object(delivered)["send_attempts"] as? [[String: Any]])?.count == 2)
        let waited = TestNotification.report(
            token: "t", environment: .production, attempts: [], notificationUUID: nil, notificationType: nil,
            waitSeconds: 5)
        #expect(waited.exitCode == .notFound && waited.rendered(json: false).contains("within 5 s"))
    }

    @Test func theLedgersOwnerAndHowToMoveItFollowANewAccountToken() throws {
        let report = SetAccountToken.report(
            originalTransactionId: "2000000000000030", token: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
            environment: .production,
            ledger: .init(
                creditKey: "apple:production:2000000000000030",
                purchase: .found(owner: "u-981", state: "credited", amountCredited: 100, amountDebited: 0)))
        #expect(report.exitCode == .ok)
        let ledger = try #require(try object(report)["ledger"] as? [String: Any])
        #expect((ledger["purchase"] as? [String: Any])?["owner"] as? String == "u-981")
        #expect((ledger["how_to_move"] as? String)?.contains("LEDGER_OWNERSHIP_POLICY=transfer") == true)
        #expect(report.rendered(json: false).contains("ledger: credited, owner u-981"))
        let withoutLedger = SetAccountToken.report(
            originalTransactionId: "2000000000000030", token: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
            environment: .production, ledger: nil)
        #expect(try object(withoutLedger)["ledger"] == nil)
    }

    /// `--user`: the ledger's answer to the declaration decides the exit status (Apple's part succeeded).
    @Test func theLedgersAnswerToADeclarationIsReportedWithItsExitStatus() throws {
        let owner = SetAccountToken.Owner(
            creditKey: "apple:production:period:7000000000000030",
            purchase: .found(owner: "u-981", state: "credited", amountCredited: 0, amountDebited: 0))
        let cases: [(LedgerDeclaration, AdminExitCode, String)] = [
            (.declared(declaredAtMs: 1_767_225_600_000, resolvedClaims: 2), .ok, "2 waiting claims applied now"),
            (.conflict("this app_account_token is declared for another user"), .refused, "refused to declare"),
            (.failed("cannot reach the ledger"), .unavailable, "run the command again"),
        ]
        for (answer, exitCode, line) in cases {
            let report = SetAccountToken.report(
                originalTransactionId: "2000000000000030", token: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
                environment: .production, ledger: owner,
                declaration: SetAccountToken.Declaration(user: "u-42", answer: answer))
            #expect(report.exitCode == exitCode)
            #expect(report.rendered(json: false).contains(line), "\(report.rendered(json: false))")
            let declared = try #require(try object(report)["ledger_declaration"] as? [String: Any])
            #expect(declared["user_id"] as? String == "u-42")
        }
    }
}
