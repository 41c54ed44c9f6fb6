import AppStoreServerAPI
import Foundation
import Ledger
import Notifications
import Postgres
import Reconcile
import ServiceSupport
import SignedData
import Testing
import TestSupport

/// The hourly call budget and the notification cursor, in process over a PostgreSQL database with the ledger's schema: Apple's histories are
/// stand-ins that answer empty pages (one call each), the clock is the test's. Purchases beyond the budget wait for
/// the next sweep, never-checked first, so every credited purchase is eventually checked.
@Suite("reconcile sweep in process: budget and cursor", .serialized)
struct ReconcileBudgetTests {
    struct EmptyNotifications: NotificationHistoryPaging {
        let calls = Locked(0)
        func page(startMs: Int64, endMs: Int64, onlyFailures: Bool, paginationToken: String?) async
            -> Result<NotificationHistoryPage, NotificationHistoryError>
        {
            calls.withLock { $0 += 1 }
            return .success(NotificationHistoryPage(signedPayloads: [], hasMore: false, paginationToken: nil))
        }
    }

    /// A first page with a token, then an error for that token (an expired one) the first time it is used.
    struct ExpiringToken: NotificationHistoryPaging {
        let asked = Locked<[String?]>([])
        func page(startMs: Int64, endMs: Int64, onlyFailures: Bool, paginationToken: String?) async
            -> Result<NotificationHistoryPage, NotificationHistoryError>
        {
            let earlier = asked.withLock { asked in
                defer { asked.append(paginationToken) }
                return asked
            }
            guard let paginationToken else {
                return .success(NotificationHistoryPage(signedPayloads: [], hasMore: true, paginationToken: "t1"))
            }
            if earlier.contains(paginationToken) {
                return .success(NotificationHistoryPage(signedPayloads: [], hasMore: false, paginationToken: nil))
            }
            return .failure(NotificationHistoryError("Get Notification History failed: 400 invalid pagination token", calls: 1))
        }
    }

    struct EmptyRefunds: RefundHistoryPaging {
        let asked = Locked<[String]>([])
        func page(transactionId: String, revision: String?) async -> Result<RefundHistoryPage, RefundHistoryFailure> {
            asked.withLock { $0.append(transactionId) }
            return .success(RefundHistoryPage(signedTransactions: [], hasMore: false, revision: nil))
        }
    }

    struct AcknowledgingProducer: CorrectionProducing {
        func produce(topic: String, key: [UInt8]?, value: [UInt8], headers: [(name: String, value: String)]) async
            -> String?
        { nil }
    }

    static let hourMs: Int64 = 3_600_000

    func sweep(
        _ connectionString: String, nowMs: Int64, notifications: any NotificationHistoryPaging, refunds: EmptyRefunds,
        budget: Int = 3
    ) async throws -> (ReconcileOutcome, [String: Any]) {
        let connection = try PostgresConnection(connectionString: connectionString)
        defer { connection.close() }
        let verifier = AppleSignedDataVerifier(trustedRoots: [])
        let policy = NotificationPolicy(allowedBundleIds: ["com.example.game"])
        let lines = Locked<[String]>([])
        let outcome = await ReconcileSweep(
            options: ReconcileOptions(),
            settings: ReconcileSettings(
                databaseURL: connectionString, maxCallsPerHour: budget, creditedWithinDays: 30, notificationLagMinutes: 0),
            topics: TopicNames(), connection: connection, notifications: notifications, refunds: refunds,
            processor: NotificationProcessor(verifier: verifier, policy: policy),
            refundEvents: RefundDebitEvent(verifier: verifier, policy: policy), producer: AcknowledgingProducer(),
            logger: Logger(label: "reconcile-test", threshold: .error),
            output: { line in lines.withLock { $0.append(line) } }, nowMs: { nowMs }
        ).run()
        let last = try #require(lines.withLock { $0 }.last)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
        return (outcome, try #require(object["summary"] as? [String: Any]))
    }

    @Test func aPageRefusedUnderAStoredTokenRestartsTheWindowAtTheNextSweep() async throws {
        let database = try TestPostgresServer.freshDatabase("reconcile_token")
        do {
            let connection = try PostgresConnection(connectionString: database)
            defer { connection.close() }
            try LedgerSchema.migrate(connection)
        }
        let notifications = ExpiringToken()
        let now: Int64 = 1_800_000_000_000
        let (first, failed) = try await sweep(
            database, nowMs: now, notifications: notifications, refunds: EmptyRefunds(), budget: 100)
        #expect(first == .failed("Get Notification History failed: 400 invalid pagination token"))
        #expect(failed["status"] as? String == "failed")
        // The next sweep reads the same window from its start, then follows the token to its end.
        let (second, _) = try await sweep(
            database, nowMs: now + 60_000, notifications: notifications, refunds: EmptyRefunds(), budget: 100)
        #expect(second == .succeeded)
        #expect(notifications.asked.withLock { $0 } == [nil, "t1", nil, "t1"])
    }

    @Test func purchasesBeyondTheBudgetWaitForTheNextSweepOldestUncheckedFirst() async throws {
        let database = try TestPostgresServer.freshDatabase("reconcile_budget")
        let now: Int64 = 1_800_000_000_000
        do {
            let connection = try PostgresConnection(connectionString: database)
            defer { connection.close() }
            try LedgerSchema.migrate(connection)
            // Three credited purchases (credited an hour apart), one credited long ago (outside the window).
            for (id, creditedAt) in [("11", now - 3 * Self.hourMs), ("12", now - 2 * Self.hourMs), ("13", now - Self.hourMs), ("99", now - 90 * 24 * Self.hourMs)] {
                try connection.execute(
                    """
                    INSERT INTO purchases (credit_key, status, owner, original_transaction_id, credited_at_ms, updated_at_ms)
                    VALUES ($1, 'credited', 'u', $2, $3, $3)
                    """, [.text("apple:production:\(id)"), .text(id), .int(creditedAt)])
            }
            // The ledger reads nothing (and fails nothing) while receipt-reconcile never ran.
            #expect(try ReconcileFigures.read(on: connection) == nil)
        }
        let notifications = EmptyNotifications()
        let refunds = EmptyRefunds()

        // A budget of 3: one Notification History page, then the two oldest credits.
        let (first, summary) = try await sweep(database, nowMs: now, notifications: notifications, refunds: refunds)
        #expect(first == .succeeded)
        #expect(refunds.asked.withLock { $0 } == ["11", "12"])
        #expect(summary["server_api_calls"] as? Int == 3)
        #expect(summary["budget_exhausted"] as? Bool == true)
        #expect(summary["purchases_checked"] as? Int == 2)
        #expect(summary["purchases_unchecked"] as? Int == 1)

        // Ten minutes later the hour's budget is spent: nothing is asked.
        let (second, spent) = try await sweep(
            database, nowMs: now + 600_000, notifications: notifications, refunds: refunds)
        #expect(second == .succeeded)
        #expect(spent["server_api_calls"] as? Int == 0)
        #expect(refunds.asked.withLock { $0 }.count == 2 && notifications.calls.withLock { $0 } == 1)

        // An hour on: the never-checked purchase first, then the longest unchecked.
        let (third, next) = try await sweep(
            database, nowMs: now + Self.hourMs + 1, notifications: notifications, refunds: refunds)
        #expect(third == .succeeded)
        #expect(refunds.asked.withLock { $0 } == ["11", "12", "13", "11"])
        #expect(next["purchases_unchecked"] as? Int == 0)
        #expect(notifications.calls.withLock { $0 } == 2)

        // What the ledger exports: the last succeeded sweep's figures.
        let connection = try PostgresConnection(connectionString: database)
        defer { connection.close() }
        let figures = try #require(try ReconcileFigures.read(on: connection))
        #expect(figures.lastSweepFinishedMs == now + Self.hourMs + 1)
        #expect(figures.uncheckedPurchases == 0 && figures.driftAppleRefunded == 0 && figures.unproducedCorrections == 0)
    }
}
