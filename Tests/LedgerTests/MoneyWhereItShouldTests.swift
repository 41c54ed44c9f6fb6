import Dispatch
import Foundation
import Ledger
import LedgerRules
import Postgres
import Testing

/// The round-4 crediting rules through the real decoders and SQL where they need more than one purchase or what the
/// store knows besides the purchase: upgrades found among a subscription's periods, the key migration, owners and
/// their links, identifiers the database cannot hold. One purchase's rules (sandbox books, Family Sharing, Apple's
/// event order, prorated refunds before the credit) are rows of `CreditingTable`, run through the store by
/// `CreditingTableStoreTests`.
@Suite struct MoneyWhereItShouldTests {
    typealias F = LedgerFixtures
    static let day: Int64 = 86_400_000
    static var monthlyGems: [String: Any] { ["item": "gems", "amount": 300] }
    static var yearlyGems: [String: Any] { ["item": "gems", "amount": 3_000] }

    // MARK: Upgrades

    static func monthly(_ extra: (inout [String: Any]) -> Void = { _ in }) -> [String: Any] {
        var transaction = F.transaction(
            creditKey: "p1", originalTransactionId: "o1", productId: "monthly", credit: monthlyGems,
            expiresDateMs: 30 * day, purchaseDateMs: 0)
        extra(&transaction)
        return transaction
    }

    static var yearly: [String: Any] {
        F.transaction(
            creditKey: "p2", originalTransactionId: "o1", productId: "yearly", credit: yearlyGems,
            expiresDateMs: 375 * day, purchaseDateMs: 10 * day)
    }

    @Test func anUpgradeNotificationTakesBackTheReplacedPeriodsUnusedShare() throws {
        let db = try LedgerDatabase("ledger_upgrade_event")
        try db.applyResults(F.result(submissionId: "s1", userId: "u1", transactions: [Self.monthly()]))
        let summary = try db.applyEvents(
            F.event(eventId: "e1", type: "credit", transaction: Self.yearly, subtype: "UPGRADE"))
        #expect(summary.upgrades == 1)
        // 300 + 3000 - 200 (two thirds of the month unused).
        #expect(try db.user("u1").balance("gems") == 3_100)
        #expect(try db.purchase(F.key("p1"))?.state == "upgraded")
        #expect(try db.purchase(F.key("p1"))?.amountDebited == 200)
        // The same notification again, or the new period's own result, takes nothing more.
        try db.applyResults(F.result(submissionId: "s2", userId: "u1", transactions: [Self.yearly]))
        #expect(try db.user("u1").balance("gems") == 3_100)
    }

    @Test func isUpgradedOnTheOldPeriodInALaterResultIsEvidenceToo() throws {
        let db = try LedgerDatabase("ledger_upgrade_result")
        try db.applyResults(F.result(submissionId: "s1", userId: "u1", transactions: [Self.monthly()]))
        let upgradedAway = Self.monthly { $0["is_upgraded"] = true; $0["creditable"] = false }
        try db.applyResults(F.result(submissionId: "s2", userId: "u1", transactions: [upgradedAway, Self.yearly]))
        #expect(try db.user("u1").balance("gems") == 3_100)
    }

    @Test func anOverlapWithoutEvidenceIsNoUpgrade() throws {
        let db = try LedgerDatabase("ledger_upgrade_none")
        try db.applyResults(F.result(submissionId: "s1", userId: "u1", transactions: [Self.monthly(), Self.yearly]))
        #expect(try db.user("u1").balance("gems") == 3_300)
    }

    // MARK: The key migration

    @Test func aPreMigrationKeyAndTheNewKeyAreOnePurchase() throws {
        let db = try LedgerDatabase("ledger_key_migration")
        // A non-consumable restored on a second device: two transaction ids, one original.
        let old = F.transaction(
            creditKey: "x", originalTransactionId: "o1", credit: ["item": "gems", "amount": 1_000],
            writtenKey: "apple:production:t1", transactionId: "t1", periodId: .some(nil))
        let new = F.transaction(
            creditKey: "x", originalTransactionId: "o1", credit: ["item": "gems", "amount": 1_000],
            writtenKey: "apple:production:o1", transactionId: "t2", periodId: .some(nil))
        let summary = try db.applyResults(
            F.result(submissionId: "s1", userId: "u1", transactions: [old]),
            F.result(submissionId: "s2", userId: "u1", transactions: [new]))
        #expect(try db.user("u1").balance("gems") == 1_000)
        #expect(summary.rederivedKeys == 1)
        #expect(try db.purchase("apple:production:o1")?.amountCredited == 1_000)
        #expect(try db.purchase("apple:production:t1") == nil)
    }

    // MARK: Owners

    @Test func theTokensOwnerOwnsTheTransactionNotTheOriginalIdsFirstUser() throws {
        let db = try LedgerDatabase("ledger_token_first")
        let tokenA = "aaaaaaaa-0000-4000-8000-000000000001"
        let tokenB = "bbbbbbbb-0000-4000-8000-000000000002"
        func period(_ label: String, _ token: String) -> [String: Any] {
            F.transaction(creditKey: label, originalTransactionId: "o1", productId: "pro", credit: F.pro, appAccountToken: token)
        }
        try db.applyResults(F.result(submissionId: "s1", userId: "A", transactions: [period("p1", tokenA)]))
        // B resubscribes on A's Apple ID: the renewal names B's token, not yet linked; it waits for B.
        let waiting = try db.applyEvents(F.event(eventId: "e1", type: "credit", transaction: period("p2", tokenB)))
        #expect(waiting.parkedClaims == 1)
        #expect(try db.user("A").entitlements.map(\.creditKey) == [F.key("p1")])
        let claimed = try db.applyResults(F.result(submissionId: "s2", userId: "B", transactions: [period("p2", tokenB)]))
        #expect(claimed.refusedClaims == 0)
        #expect(try db.user("B").entitlements.map(\.creditKey) == [F.key("p2")])
        #expect(try db.count("pending_claims") == 0)
        // A's own token still finds A.
        try db.applyEvents(F.event(eventId: "e2", type: "credit", transaction: period("p3", tokenA)))
        #expect(try db.user("A").entitlements.map(\.creditKey) == [F.key("p1"), F.key("p3")])
    }

    @Test func aClaimOfATransactionWhoseTokenIsSomeoneElsesIsRefused() throws {
        let db = try LedgerDatabase("ledger_token_claim")
        let token = "aaaaaaaa-0000-4000-8000-000000000003"
        try db.applyResults(
            F.result(submissionId: "s1", userId: "A", transactions: [F.transaction(creditKey: "k1", appAccountToken: token)]))
        let summary = try db.applyResults(
            F.result(submissionId: "s2", userId: "C", transactions: [F.transaction(creditKey: "k2", appAccountToken: token)]))
        #expect(try db.user("A").balance("gems") == 200)
        #expect(try db.user("C").balances.isEmpty)
        #expect(summary.refusedClaims == 1)
        #expect(try db.purchase(F.key("k2"))?.refusedClaims.map(\.userId) == ["C"])
    }

    @Test func underTransferARefusedClaimMovesNoOwnerLink() throws {
        let db = try LedgerDatabase("ledger_transfer_links", policy: .transfer)
        let first = F.transaction(creditKey: "p1", originalTransactionId: "o1")
        try db.applyResults(F.result(submissionId: "s1", userId: "A", transactions: [first]))
        // Items never move: B's claim is refused, and the subscription's id stays A's.
        try db.applyResults(F.result(submissionId: "s2", userId: "B", transactions: [first]))
        try db.applyEvents(
            F.event(eventId: "e1", type: "credit", transaction: F.transaction(creditKey: "p2", originalTransactionId: "o1")))
        #expect(try db.user("A").balance("gems") == 200)
        #expect(try db.user("B").balances.isEmpty)
    }

    /// Two ledgers on one database: one parks a renewal for an owner while the other commits the result that links
    /// that owner. The interleaving is forced: the parking batch holds its transaction open until the linking
    /// batch waits on it (seen in `pg_locks`), in both orders.
    @Test(arguments: [true, false])
    func aParkedClaimIsResolvedWhicheverInstanceCommitsFirst(parkFirst: Bool) throws {
        let db = try LedgerDatabase("ledger_park_race_\(parkFirst ? "park" : "link")")
        let second = try PostgresConnection(connectionString: db.connectionString)
        let observer = try PostgresConnection(connectionString: db.connectionString)
        let renewal = F.transaction(creditKey: "p2", originalTransactionId: "o1", productId: "pro", credit: F.pro)
        let parking = db.append([F.event(eventId: "e1", type: "credit", transaction: renewal)], to: F.topics.events)
        let linking = db.append(
            [F.result(
                submissionId: "s1", userId: "u1",
                transactions: [F.transaction(creditKey: "p1", originalTransactionId: "o1", productId: "pro", credit: F.pro)])],
            to: F.topics.results)
        let (held, waiting) = parkFirst ? (parking, linking) : (linking, parking)
        let store = db.store
        let done = DispatchSemaphore(value: 0)
        let outcome = LockedOutcome()
        try db.connection.transaction { session throws(PostgresError) in
            _ = try store.apply(held, in: session, nowMs: 9_000)
            DispatchQueue.global().async {
                do {
                    try second.transaction { other throws(PostgresError) in
                        _ = try store.apply(waiting, in: other, nowMs: 9_000)
                    }
                } catch {
                    outcome.record(error)
                }
                done.signal()
            }
            // The other batch is blocked behind this transaction's lock on the id before this one commits.
            var blocked = false
            for _ in 0..<1_000 where !blocked {
                blocked = try observer.execute(
                    "SELECT count(*) AS waiting FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                ).rows[0].int64("waiting") > 0
                if !blocked { usleep(10_000) }
            }
            #expect(blocked, "the second batch waits for the first one's lock")
        }
        done.wait()
        #expect(outcome.error == nil)
        #expect(try db.user("u1").entitlements.map(\.creditKey) == [F.key("p1"), F.key("p2")])
        #expect(try db.count("pending_claims") == 0)
    }

    // MARK: Text the database cannot hold

    @Test func identifiersWithControlCharactersAreDeadLetteredNeverTruncated() throws {
        let db = try LedgerDatabase("ledger_control_chars")
        let summary = try db.applyResults(
            F.result(submissionId: "s1", userId: "victim\u{0}x", transactions: [F.transaction(creditKey: "k1")]),
            F.result(submissionId: "s2", userId: "u1", transactions: [F.transaction(creditKey: "k2\u{7}")]))
        #expect(summary.deadLettered == 2)
        #expect(try db.user("victim").balances.isEmpty)
        #expect(try db.count("purchases") == 0)
        let reasons = try db.connection.execute(#"SELECT reason FROM dead_letters ORDER BY "offset""#).rows.map { try $0.string("reason") }
        #expect(reasons.map { $0.prefix(50) } == [
            "user_id contains the control character U+0000 (ide",
            "transaction.credit_key contains the control charac",
        ])
        #expect(reasons.last?.contains("U+0007") == true)
    }
}

/// The error a background batch ended with, read after it finished.
final class LockedOutcome: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: (any Error)?

    func record(_ error: any Error) { lock.withLock { stored = error } }
    var error: (any Error)? { lock.withLock { stored } }
}
