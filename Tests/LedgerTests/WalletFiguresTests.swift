import LedgerRules
import ServiceSupport
import Testing
import TestSupport

@testable import Ledger

/// The wallet's outstanding gauges through the real SQL: what refunds left owed (debt, the users owing it, or
/// unrecovered units) per book and item, and what a reversal cancels again.
@Suite struct WalletFiguresTests {
    typealias F = LedgerFixtures

    /// The gauges of one book and item, as a scrape renders them.
    struct Reading: Equatable {
        var debt: Double, usersInDebt: Double, unrecovered: Double
    }

    /// The gauges after reading the database as the worker does every 30 s, from the rendered exposition: every
    /// (book, item) series there is, and nothing else.
    static func read(_ db: LedgerDatabase, into metrics: WalletMetrics, registry: MetricsRegistry) throws
        -> [String: Reading]
    {
        metrics.update(try WalletFigures.read(on: db.connection))
        var values: [String: [String: Double]] = [:]
        let names = [
            "ledger_wallet_debt_outstanding_units", "ledger_wallet_users_in_debt",
            "ledger_wallet_unrecovered_outstanding_units",
        ]
        for line in registry.render().split(separator: "\n") where !line.hasPrefix("#") {
            guard let brace = line.firstIndex(of: "{"), let close = line.firstIndex(of: "}"),
                names.contains(String(line[..<brace]))
            else { continue }
            let value = try #require(Double(line[line.index(after: close)...].trimmingCharacters(in: .whitespaces)))
            values[String(line[line.index(after: brace)..<close]), default: [:]][String(line[..<brace])] = value
        }
        return values.mapValues { figures in
            Reading(
                debt: figures[names[0]] ?? -1, usersInDebt: figures[names[1]] ?? -1, unrecovered: figures[names[2]] ?? -1)
        }
    }

    /// Two users spend part of a gems purchase that is then refunded: 70 and 50 gems the refunds could not take; one
    /// of them also spends 30 of 40 coins refunded the same way. Under `debt` they are owed (gems by two users, coins
    /// by one), under `floor` recorded unrecovered, never summed across items; the sandbox book owes nothing. A
    /// reversal of the first gems refund cancels its 70.
    @Test(arguments: ClawbackPolicy.allCases)
    func theGaugesReadWhatRefundsLeftOutstandingPerBookAndItem(_ policy: ClawbackPolicy) throws {
        let db = try LedgerDatabase("wallet_figures_\(policy)", clawback: policy)
        let registry = MetricsRegistry()
        let metrics = WalletMetrics(registry: registry)
        #expect(try Self.read(db, into: metrics, registry: registry) == [:], "nothing read, nothing outstanding")
        let coins = F.transaction(
            creditKey: "c1", productId: "com.example.coins40", credit: ["item": "coins", "amount": 40])
        try db.applyResults(
            WalletStoreTests.purchase("p1"),
            WalletStoreTests.purchase("p2", user: "u2"),
            WalletStoreTests.purchase("s1", environment: "Sandbox"),
            F.result(submissionId: "s-c1", userId: "u1", transactions: [coins], environment: "Production"))
        #expect(try Self.read(db, into: metrics, registry: registry) == [:])
        #expect(try db.spend(70, key: "k1").status == 200)
        #expect(try db.spend(50, key: "k2", user: "u2").status == 200)
        #expect(try db.spend(30, key: "k4", item: "coins").status == 200)
        #expect(try db.spend(100, key: "k3", book: .sandbox).status == 200, "spent in sandbox, never refunded")
        try db.applyEvents(
            WalletStoreTests.refund("p1", eventId: "r1"), WalletStoreTests.refund("p2", eventId: "r2"),
            F.event(
                eventId: "r4", type: "debit",
                transaction: F.transaction(
                    creditKey: "c1", productId: "com.example.coins40", credit: ["item": "coins", "amount": 40])))
        func owed(_ units: Double, users: Double) -> Reading {
            policy == .debt
                ? Reading(debt: units, usersInDebt: users, unrecovered: 0)
                : Reading(debt: 0, usersInDebt: 0, unrecovered: units)
        }
        let gems = #"book="production",item="gems""#
        let coinsSeries = #"book="production",item="coins""#
        #expect(
            try Self.read(db, into: metrics, registry: registry)
                == [gems: owed(120, users: 2), coinsSeries: owed(30, users: 1)])

        try db.applyEvents(WalletStoreTests.reversal("p1", eventId: "r3"))
        #expect(
            try Self.read(db, into: metrics, registry: registry)
                == [gems: owed(50, users: 1), coinsSeries: owed(30, users: 1)])
        try db.applyEvents(
            F.event(
                eventId: "r5", type: "recredit",
                transaction: F.transaction(
                    creditKey: "c1", productId: "com.example.coins40", credit: ["item": "coins", "amount": 40])))
        let none = Reading(debt: 0, usersInDebt: 0, unrecovered: 0)
        #expect(
            try Self.read(db, into: metrics, registry: registry) == [gems: owed(50, users: 1), coinsSeries: none],
            "an item with nothing outstanding any more reads 0, its series stays; the sandbox book never had one")
        try db.expectConsistent()
    }
}
