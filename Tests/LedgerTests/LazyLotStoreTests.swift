import Foundation
import LedgerRules
import Postgres
import Testing
import TestSupport

@testable import Ledger

/// Schema 12: a purchase's lot has no `wallet_lots` row until something draws on it (its purchase row carries it);
/// spends, take-backs and reversals answer what they answered when every lot was a row, the first change writes the
/// row once, and a schema 11 database keeps every balance, lot and history page through the upgrade.
@Suite struct LazyLotStoreTests {
    typealias F = LedgerFixtures

    /// The lots that have a row, by key.
    static func lotRows(_ db: LedgerDatabase) throws -> [String] {
        try db.connection.execute("SELECT lot_key FROM wallet_lots ORDER BY lot_key").rows.map {
            row throws(PostgresError) in try row.string("lot_key")
        }
    }

    /// The purchases flagged as carrying an untouched lot (the `lot_untouched` range of `purchases_owner`), by key.
    static func flaggedUntouched(_ db: LedgerDatabase) throws -> [String] {
        try db.connection.execute("SELECT credit_key FROM purchases WHERE lot_untouched ORDER BY credit_key").rows.map {
            row throws(PostgresError) in try row.string("credit_key")
        }
    }

    @Test func aCreditWithoutALotRowIsSpentFirstInFirstOutBeforeALaterWrittenLot() throws {
        let db = try LedgerDatabase("lazy_lot_fifo")
        try db.applyResults(WalletStoreTests.purchase("p1"))
        try db.applyResults(WalletStoreTests.purchase("p2"))
        try db.applyEvents(WalletStoreTests.refund("p2", eventId: "r2", percentage: 50_000))
        try db.applyResults(WalletStoreTests.purchase("p3"))
        #expect(try Self.lotRows(db) == [F.key("p2")], "only the refund drew on a lot")
        #expect(try Self.flaggedUntouched(db) == [F.key("p1"), F.key("p3")].sorted(), "the refund's first touch cleared p2")
        #expect(try db.lot("u1", F.key("p1")) == Lot(amount: 100, spent: 0, taken: 0, covered: 0))
        #expect(try db.lot("u1", F.key("p2")) == Lot(amount: 100, spent: 0, taken: 50, covered: 0))
        #expect(try db.user("u1").balance("gems") == 250)
        try db.expectConsistent()

        let answer = try db.spend(180, key: "k1")
        #expect(answer.status == 200)
        let attribution = try #require(answer.json?["attribution"] as? [[String: Any]])
        #expect(attribution.map { $0["lot"] as? String } == [F.key("p1"), F.key("p2"), F.key("p3")])
        #expect(attribution.map { $0["amount"] as? Int } == [100, 50, 30])
        #expect(try Self.lotRows(db) == [F.key("p1"), F.key("p2"), F.key("p3")].sorted())
        #expect(try Self.flaggedUntouched(db).isEmpty, "every lot is a row now: a wallet's read finds none by index")
        #expect(try db.lot("u1", F.key("p1")) == Lot(amount: 100, spent: 100, taken: 0, covered: 0))
        #expect(try db.lot("u1", F.key("p3")) == Lot(amount: 100, spent: 30, taken: 0, covered: 0))
        #expect(try db.purchase(F.key("p3"))?.amountConsumed == 30)
        #expect(try db.purchase(F.key("p3"))?.amountRemaining == 70)
        let written = try db.connection.execute(
            "SELECT count(*) AS n FROM wallet_lots WHERE history_seq IS NOT NULL").rows[0]
        #expect(try written.int64("n") == 0, "the credits' entries stay their purchases'")
        #expect(
            try db.history().map { $0["key"] as? String }
                == ["k1", F.key("p3"), "r2", F.key("p2"), F.key("p1")])
        #expect(try db.count("wallet_history") == 2, "the spend and the debit; the credits are their purchases'")
        try db.expectConsistent()
    }

    @Test func aTakeBackOfAnUntouchedPurchaseWritesItsLotOnceAndAReversalGivesItBack() throws {
        let db = try LedgerDatabase("lazy_lot_take_back")
        try db.applyResults(WalletStoreTests.purchase("p1"), WalletStoreTests.purchase("p2"))
        #expect(try Self.lotRows(db).isEmpty)
        #expect(try db.purchase(F.key("p1"))?.amountRemaining == 100)
        #expect(try ConsumptionStore.facts(of: F.key("p1"), on: db.connection).consumed == 0)
        try db.applyEvents(WalletStoreTests.refund("p1", eventId: "r1"))
        #expect(try Self.lotRows(db) == [F.key("p1")])
        #expect(try db.lot("u1", F.key("p1")) == Lot(amount: 100, spent: 0, taken: 100, covered: 0))
        #expect(try db.user("u1").balance("gems") == 100)
        #expect(try db.purchase(F.key("p1"))?.amountRemaining == 0)
        #expect(try db.purchase(F.key("p1"))?.amountConsumed == 0)
        // Taken once: the same refund again takes nothing (its clawback is recorded).
        try db.applyEvents(WalletStoreTests.refund("p1", eventId: "r1"))
        #expect(try db.user("u1").balance("gems") == 100)
        try db.applyEvents(WalletStoreTests.reversal("p1", eventId: "x1"))
        #expect(try db.lot("u1", F.key("p1")) == Lot(amount: 100, spent: 0, taken: 0, covered: 0))
        #expect(try db.user("u1").balance("gems") == 200)
        #expect(try Self.lotRows(db) == [F.key("p1")], "p2 was never drawn on")
        #expect(try db.history().map { $0["kind"] as? String } == ["recredit", "debit", "credit", "credit"])
        try db.expectConsistent()
    }

    /// Schema 12 on a populated schema 11: lot rows (their credits' entries among them) stay rows, every balance,
    /// lot, consumed amount and history page reads the same, and a credit after the upgrade is an untouched lot
    /// spent after the older rows, numbered after every entry.
    @Test func theUpgradeFromSchema11KeepsEveryLotAndEntry() throws {
        let db = try LedgerDatabase("lazy_lot_upgrade", migrate: false)
        #expect(try LedgerSchema.migrate(db.connection, upTo: 11).last == 11)
        let p1 = F.key("p1"), p2 = F.key("p2")
        for (key, at) in [(p1, Int64(1_000)), (p2, Int64(2_000))] {
            try db.connection.execute(
                """
                INSERT INTO purchases (credit_key, status, owner, product_id, grant_kind, grant_name, grant_amount,
                    quantity, amount_credited, credited_at_ms, updated_at_ms, book)
                VALUES ($1, 'credited', 'u1', 'p', 'item', 'gems', 100, 1, 100, $2, $2, 'production')
                """, [.text(key), .int(at)])
        }
        // As schema 11 wrote them: p1's lot carries its credit's entry, then a spend of 60 (a row), then p2's.
        try db.connection.execute(
            """
            INSERT INTO wallet_lots (user_id, lot_key, book, item, kind, amount, spent, taken, covered, added_at_ms)
            VALUES ('u1', $1, 'production', 'gems', 'purchase', 100, 60, 0, 0, 1000)
            """, [.text(p1)])
        try db.connection.execute(
            """
            INSERT INTO wallet_history (user_id, book, item, kind, key, amount, balance_change, note, at_ms)
            VALUES ('u1', 'production', 'gems', 'spend', 'k1', 60, -60, 'sword', 1500)
            """)
        try db.connection.execute(
            "INSERT INTO wallet_spends (user_id, idempotency_key, lot_key, amount) VALUES ('u1', 'k1', $1, 60)",
            [.text(p1)])
        try db.connection.execute(
            """
            INSERT INTO wallet_lots (user_id, lot_key, book, item, kind, amount, spent, taken, covered, added_at_ms)
            VALUES ('u1', $1, 'production', 'gems', 'purchase', 100, 0, 0, 0, 2000)
            """, [.text(p2)])
        try db.connection.execute(
            "INSERT INTO balances (user_id, book, item, amount) VALUES ('u1', 'production', 'gems', 140)")
        let entriesBefore = try WalletHistoryStoreTests.entries(from: "wallet_history_entries", on: db.connection)
        let pagesBefore = try WalletHistoryStoreTests.pagedKeys("u1", limit: 2, on: db.connection)
        /// Each lot's consumed and remaining units, as `GET /v1/purchases/{credit_key}` reads them.
        func lots(from relation: String) throws -> [String] {
            try db.connection.execute(
                """
                SELECT lot_key, spent + covered AS consumed, amount - spent - taken - covered AS remaining
                FROM \(relation) ORDER BY lot_key
                """
            ).rows.map { row throws(PostgresError) in
                "\(try row.string("lot_key")) \(try row.int64("consumed")) \(try row.int64("remaining"))"
            }
        }
        let lotsBefore = try lots(from: "wallet_lots")

        #expect(try LedgerSchema.migrate(db.connection) == [12, 13])
        #expect(try WalletHistoryStoreTests.entries(from: "wallet_history_entries", on: db.connection) == entriesBefore)
        #expect(try WalletHistoryStoreTests.pagedKeys("u1", limit: 2, on: db.connection) == pagesBefore)
        #expect(pagesBefore == [p2, "k1", p1])
        #expect(try lots(from: "wallet_lot_states") == lotsBefore)
        #expect(try db.purchase(p1)?.amountConsumed == 60)
        #expect(try db.purchase(p1)?.amountRemaining == 40)
        #expect(try db.purchase(p2)?.amountRemaining == 100)
        #expect(try db.user("u1").balance("gems") == 140)
        #expect(try db.lot("u1", p1) == Lot(amount: 100, spent: 60, taken: 0, covered: 0))
        #expect(try Self.lotRows(db) == [p1, p2].sorted())
        try db.expectConsistent()

        // A credit after the upgrade: no lot row, spent after the older lots, numbered after every entry.
        try db.applyResults(WalletStoreTests.purchase("p3"))
        #expect(try Self.lotRows(db) == [p1, p2].sorted())
        let answer = try db.spend(160, key: "k2")
        let attribution = try #require(answer.json?["attribution"] as? [[String: Any]])
        #expect(attribution.map { $0["lot"] as? String } == [p1, p2, F.key("p3")])
        #expect(attribution.map { $0["amount"] as? Int } == [40, 100, 20])
        #expect(try WalletHistoryStoreTests.pagedKeys("u1", limit: 2, on: db.connection) == ["k2", F.key("p3")] + pagesBefore)
        #expect(try db.user("u1").balance("gems") == 80)
        try db.expectConsistent()
    }
}
