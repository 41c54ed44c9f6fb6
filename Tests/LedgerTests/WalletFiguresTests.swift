import LedgerRules
import ServiceSupport
import Testing
import TestSupport

@testable import Ledger

/// The wallet's outstanding gauges through the real SQL: what refunds left owed (debt, the users owing it, or
/// unrecovered units) per book, and what a reversal cancels again.
@Suite struct WalletFiguresTests {
    typealias F = LedgerFixtures

    /// The gauges of `book` after reading the database as the worker does every few seconds.
    struct Reading: Equatable {
        var debt: Double, usersInDebt: Double, unrecovered: Double
    }

    static func read(_ db: LedgerDatabase) throws -> [Book: Reading] {
        let metrics = WalletMetrics(registry: MetricsRegistry())
        metrics.update(try WalletFigures.read(on: db.connection))
        var readings: [Book: Reading] = [:]
        for book in Book.allCases {
            readings[book] = Reading(
                debt: metrics.debtOutstanding[book.rawValue]?.current ?? -1,
                usersInDebt: metrics.usersInDebt[book.rawValue]?.current ?? -1,
                unrecovered: metrics.unrecoveredOutstanding[book.rawValue]?.current ?? -1)
        }
        return readings
    }

    /// Two users spend part of a purchase that is then refunded: 70 and 50 units the refunds could not take. Under
    /// `debt` they are owed by two users, under `floor` recorded unrecovered; the sandbox book owes nothing. A
    /// reversal of the first refund cancels its 70.
    @Test(arguments: ClawbackPolicy.allCases)
    func theGaugesReadWhatRefundsLeftOutstandingPerBook(_ policy: ClawbackPolicy) throws {
        let db = try LedgerDatabase("wallet_figures_\(policy)", clawback: policy)
        let none = Reading(debt: 0, usersInDebt: 0, unrecovered: 0)
        #expect(try Self.read(db) == [.production: none, .sandbox: none])
        try db.applyResults(
            WalletStoreTests.purchase("p1"),
            WalletStoreTests.purchase("p2", user: "u2"),
            WalletStoreTests.purchase("s1", environment: "Sandbox"))
        #expect(try db.spend(70, key: "k1").status == 200)
        #expect(try db.spend(50, key: "k2", user: "u2").status == 200)
        #expect(try db.spend(100, key: "k3", book: .sandbox).status == 200, "spent in sandbox, never refunded")
        try db.applyEvents(
            WalletStoreTests.refund("p1", eventId: "r1"), WalletStoreTests.refund("p2", eventId: "r2"))
        let owed = policy == .debt
            ? Reading(debt: 120, usersInDebt: 2, unrecovered: 0) : Reading(debt: 0, usersInDebt: 0, unrecovered: 120)
        #expect(try Self.read(db) == [.production: owed, .sandbox: none])

        try db.applyEvents(WalletStoreTests.reversal("p1", eventId: "r3"))
        let left = policy == .debt
            ? Reading(debt: 50, usersInDebt: 1, unrecovered: 0) : Reading(debt: 0, usersInDebt: 0, unrecovered: 50)
        #expect(try Self.read(db) == [.production: left, .sandbox: none])
        try db.expectConsistent()
    }
}
