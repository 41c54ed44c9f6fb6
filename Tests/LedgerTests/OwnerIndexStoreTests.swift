import Foundation
import LedgerRules
import Postgres
import Testing
import TestSupport

@testable import Ledger

/// Schema 13: one index on a purchase's owner (`purchases_owner` on (owner, lot_untouched)) answers both an owner's
/// purchases and a wallet's untouched lots, where schema 12 wrote a second entry per credit
/// (`purchases_untouched_lots`). Every read answers as before the upgrade, and a wallet's read still finds the
/// untouched lots by index, not by every purchase of the owner.
@Suite struct OwnerIndexStoreTests {
    typealias F = LedgerFixtures

    /// The definitions of `purchases`' indexes on its owner, by name.
    static func ownerIndexes(_ db: LedgerDatabase) throws -> [String] {
        try db.connection.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'purchases' AND indexdef LIKE '%owner%'"
                + " ORDER BY 1"
        ).rows.map { row throws(PostgresError) in "\(try row.string("indexname")): \(try row.string("indexdef"))" }
    }

    /// What every read of `users` answers: user views, purchase views, lots as their reads see them, history pages.
    static func reads(_ db: LedgerDatabase, users: [String], purchases: [String]) throws -> [String] {
        var answers: [String] = []
        for user in users {
            answers.append("\(try db.user(user))")
            answers += try WalletHistoryStoreTests.pagedKeys(user, limit: 2, on: db.connection)
        }
        for key in purchases { answers.append("\(String(describing: try db.purchase(key)))") }
        answers += try db.connection.execute(
            """
            SELECT user_id, lot_key, amount, spent, taken, covered, untouched FROM wallet_lot_states
            ORDER BY user_id, lot_key
            """
        ).rows.map { row throws(PostgresError) in
            try [
                row.string("user_id"), row.string("lot_key"), String(row.int64("amount")), String(row.int64("spent")),
                String(row.int64("taken")), String(row.int64("covered")), String(row.bool("untouched")),
            ].joined(separator: " ")
        }
        answers += try WalletHistoryStoreTests.entries(from: "wallet_history_entries", on: db.connection)
        return answers
    }

    @Test func theUpgradeFromSchema12KeepsEveryReadAndIndexesUntouchedLotsByOwner() throws {
        let db = try LedgerDatabase("owner_index_upgrade", migrate: false)
        #expect(try LedgerSchema.migrate(db.connection, upTo: 12).last == 12)
        try db.applyResults(WalletStoreTests.purchase("p1"), WalletStoreTests.purchase("p2"))
        try db.applyResults(WalletStoreTests.purchase("p3", user: "u2"))
        try db.applyEvents(WalletStoreTests.refund("p2", eventId: "r2", percentage: 50_000))
        try db.applyResults(WalletStoreTests.purchase("p4"))
        #expect(try db.spend(30, key: "k1").status == 200)
        #expect(try LazyLotStoreTests.flaggedUntouched(db) == [F.key("p3"), F.key("p4")].sorted())
        let keys = ["p1", "p2", "p3", "p4"].map { F.key($0) }
        let before = try Self.reads(db, users: ["u1", "u2"], purchases: keys)

        #expect(try LedgerSchema.migrate(db.connection) == [13])
        #expect(
            try Self.ownerIndexes(db) == [
                "purchases_owner: CREATE INDEX purchases_owner ON public.purchases USING btree (owner, lot_untouched)"
            ], "one index on the owner: the partial one is gone")
        #expect(try Self.reads(db, users: ["u1", "u2"], purchases: keys) == before)
        #expect(try LazyLotStoreTests.flaggedUntouched(db) == [F.key("p3"), F.key("p4")].sorted())
        try db.expectConsistent()

        // A wallet's read finds the untouched lots by both columns of the index (one range: the owner's flagged
        // purchases), whatever the table's size would make the planner prefer.
        try db.connection.execute("SET enable_seqscan = off")
        let plan = try db.connection.execute(
            "EXPLAIN \(WalletWork.remainingLots)",
            [.textArray(["u1"]), .textArray(["production"]), .textArray(["gems"])]
        ).rows.map { row throws(PostgresError) in try row.string(0) }.joined(separator: "\n")
        try db.connection.execute("RESET enable_seqscan")
        #expect(plan.contains("purchases_owner"), "\(plan)")
        #expect(plan.contains("lot_untouched = true"), "the flag is an index condition, not a filter: \(plan)")

        // After the upgrade: p4's untouched lot is spent after the rows, first in, first out, before a newer credit's
        // (flagged untouched as before the upgrade, and still untouched after the spend).
        try db.applyResults(WalletStoreTests.purchase("p5"))
        let answer = try db.spend(200, key: "k2")
        #expect(answer.status == 200)
        let attribution = try #require(answer.json?["attribution"] as? [[String: Any]])
        #expect(attribution.map { $0["lot"] as? String } == [F.key("p1"), F.key("p2"), F.key("p4")])
        #expect(attribution.map { $0["amount"] as? Int } == [70, 50, 80])
        #expect(try LazyLotStoreTests.flaggedUntouched(db) == [F.key("p3"), F.key("p5")].sorted())
        #expect(try db.user("u1").balance("gems") == 120)
        try db.expectConsistent()
    }
}
