import Foundation
import LedgerRules
import Postgres
import Testing
import TestSupport

@testable import Ledger

/// Schema 11: a credit's history entry is its lot when the write's entries are credits alone, and a row as before
/// otherwise; the history reads both in one order of numbers, and the upgrade moves existing credit rows onto their
/// lots without losing, changing or renumbering an entry.
@Suite struct WalletHistoryStoreTests {
    typealias F = LedgerFixtures

    static let entryColumns =
        "user_id, seq, book, item, kind, key, coalesce(credit_key, '-') AS credit_key, amount, balance_change, shortfall, coalesce(note, '-') AS note, at_ms"

    /// Every entry of every user, in order, as text.
    static func entries(from relation: String, on connection: PostgresConnection) throws -> [String] {
        try connection.execute("SELECT \(entryColumns) FROM \(relation) ORDER BY user_id, seq").rows.map {
            row throws(PostgresError) in
            try [
                row.string("user_id"), String(row.int64("seq")), row.string("book"), row.string("item"),
                row.string("kind"), row.string("key"), row.string("credit_key"), String(row.int64("amount")),
                String(row.int64("balance_change")), String(row.int64("shortfall")), row.string("note"),
                String(row.int64("at_ms")),
            ].joined(separator: " ")
        }
    }

    /// The keys of `user`'s whole history read through the API's pages of `limit`, newest first.
    static func pagedKeys(_ user: String, limit: Int, on connection: PostgresConnection) throws -> [String] {
        var keys: [String] = []
        var cursor: Int64?
        repeat {
            let json = try WalletHistory.pageJSON(userId: user, limit: limit, before: cursor, on: connection)
            let page = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            let entries = try #require(page["entries"] as? [[String: Any]])
            #expect(entries.count <= limit)
            keys += entries.compactMap { $0["key"] as? String }
            cursor = (page["next_cursor"] as? String).flatMap(WalletHistory.seq(fromCursor:))
        } while cursor != nil
        return keys
    }

    @Test func aBatchOfCreditsAloneWritesNoHistoryRowsAndListsTheCreditsInOrder() throws {
        let db = try LedgerDatabase("wallet_history_from_lots")
        try db.applyResults(WalletStoreTests.purchase("p1"), WalletStoreTests.purchase("p2"))
        let copied = (3...(BatchWork.copyThreshold + 4)).map { "p\($0)" }
        try db.apply(db.append(copied.map { WalletStoreTests.purchase($0) }, to: F.topics.results))
        #expect(try db.count("wallet_history") == 0, "inserted and copied lots carry their credits' entries")
        let labels = ["p1", "p2"] + copied
        #expect(try Self.pagedKeys("u1", limit: 7, on: db.connection) == labels.reversed().map { F.key($0) })
        let newest = try #require(try db.history().first)
        #expect(newest["kind"] as? String == "credit")
        #expect(newest["credit_key"] as? String == F.key(labels.last!))
        #expect(newest["amount"] as? Int == 100 && newest["balance_change"] as? Int == 100)
        #expect(newest["shortfall"] as? Int == 0 && newest["reference"] is NSNull && newest["reason"] is NSNull)
        // A spend and a grant are rows, numbered after the credits.
        #expect(try db.spend(30, key: "k1", reference: "sword").status == 200)
        #expect(try db.grant(5, key: "g1", reason: "welcome").status == 200)
        #expect(try db.count("wallet_history") == 2)
        #expect(try db.history().prefix(3).map { $0["key"] as? String } == ["g1", "k1", F.key(labels.last!)])
        let grantLot = try db.connection.execute(
            "SELECT history_seq FROM wallet_lots WHERE user_id = 'u1' AND lot_key = 'grant:g1'"
        ).rows[0]
        #expect(try grantLot.optionalInt64("history_seq") == nil, "a grant's entry is its row, not its lot")
        try db.expectConsistent()
    }

    /// A batch whose entries are not credits alone (a refund beside a purchase) keeps every entry a row, so the
    /// entries keep the order they were made in.
    @Test func aBatchWithATakeBackKeepsItsCreditsAsRows() throws {
        let db = try LedgerDatabase("wallet_history_mixed_batch")
        try db.applyResults(WalletStoreTests.purchase("p1"))
        try db.apply(
            db.append([WalletStoreTests.refund("p1", eventId: "r1")], to: F.topics.events)
                + db.append([WalletStoreTests.purchase("p2")], to: F.topics.results))
        #expect(try db.count("wallet_history") == 2, "the debit and the credit beside it")
        // p1's entry was numbered with its credit (schema 12: its purchase carries it; the refund wrote its lot's
        // row, which carries none); p2's untouched lot is its purchase's, its entry a row.
        let carried = try db.connection.execute(
            "SELECT credit_key FROM purchases WHERE lot_history_seq IS NOT NULL ORDER BY credit_key"
        ).rows.map { row throws(PostgresError) in try row.string("credit_key") }
        #expect(carried == [F.key("p1")])
        #expect(try db.count("wallet_lots") == 1)
        #expect(
            try db.connection.execute("SELECT count(*) AS n FROM wallet_lots WHERE history_seq IS NOT NULL").rows[0]
                .int64("n") == 0)
        let rows = try Self.entries(from: "wallet_history_entries", on: db.connection)
        #expect(rows.count == 3)
        let kinds = try db.history().map { $0["kind"] as? String }
        #expect(kinds.count == 3 && Set(kinds.prefix(2)) == ["credit", "debit"] && kinds.last == "credit")
        try db.expectConsistent()
    }

    /// Schema 11 on a populated schema 10: every credit row that says what its lot says becomes its lot's entry with
    /// its number; one that differs stays a row; the history reads exactly what it read before, and a new credit is
    /// numbered after every entry.
    @Test func theUpgradeMovesCreditRowsOntoTheirLotsAndLosesNoEntry() throws {
        let db = try LedgerDatabase("wallet_history_upgrade", migrate: false)
        let upToTen = try LedgerSchema.migrate(db.connection, upTo: 10)
        #expect(upToTen.last == 10)
        // As schema 10's ledger wrote them: a lot and a credit row per purchase, rows for spends, grants, debits.
        let p1 = F.key("p1"), p2 = F.key("p2"), p3 = F.key("p3"), q1 = F.key("q1", environment: "sandbox")
        try db.connection.execute(
            """
            INSERT INTO wallet_lots (user_id, lot_key, book, item, kind, amount, spent, taken, covered, added_at_ms)
            VALUES ('u1', $1, 'production', 'gems', 'purchase', 100, 60, 40, 0, 1000),
                ('u1', $2, 'production', 'gems', 'purchase', 100, 0, 0, 0, 2000),
                ('u1', 'g1', 'production', 'gems', 'grant', 30, 0, 0, 0, 3000),
                ('u1', $3, 'production', 'coins', 'purchase', 10, 0, 0, 0, 4000),
                ('u2', $4, 'sandbox', 'gems', 'purchase', 50, 0, 0, 0, 1500)
            """, [.text(p1), .text(p2), .text(p3), .text(q1)])
        try db.connection.execute(
            """
            INSERT INTO wallet_history (user_id, book, item, kind, key, credit_key, amount, balance_change, shortfall,
                note, at_ms)
            VALUES ('u1', 'production', 'gems', 'credit', $1, $1, 100, 100, 0, NULL, 1000),
                ('u2', 'sandbox', 'gems', 'credit', $4, $4, 50, 50, 0, NULL, 1500),
                ('u1', 'production', 'gems', 'credit', $2, $2, 100, 100, 0, NULL, 2000),
                ('u1', 'production', 'gems', 'spend', 'k1', NULL, 60, -60, 0, 'sword', 2500),
                ('u1', 'production', 'gems', 'grant', 'g1', NULL, 30, 30, 0, 'welcome', 3000),
                ('u1', 'production', 'gems', 'debit', 'r1', $1, 40, -40, 0, NULL, 3500),
                ('u1', 'production', 'coins', 'credit', $3, $3, 10, 10, 0, NULL, 4001)
            """, [.text(p1), .text(p2), .text(p3), .text(q1)])
        try db.connection.execute(
            """
            INSERT INTO balances (user_id, book, item, amount) VALUES ('u1', 'production', 'gems', 130),
                ('u1', 'production', 'coins', 10), ('u2', 'sandbox', 'gems', 50)
            """)
        let before = try Self.entries(from: "wallet_history", on: db.connection)
        let files = "SELECT pg_relation_filenode('purchases') AS purchases, pg_relation_filenode('wallet_lots') AS lots"
        let filesBefore = try db.connection.execute(files).rows[0]
        #expect(try LedgerSchema.migrate(db.connection) == [11, 12, 13])
        let filesAfter = try db.connection.execute(files).rows[0]
        #expect(
            try filesAfter.int64("purchases") == filesBefore.int64("purchases")
                && filesAfter.int64("lots") == filesBefore.int64("lots"),
            "byte-order text and the lots' new column rewrite no table")
        let collations = try db.connection.execute(
            """
            SELECT count(*) AS n FROM pg_attribute
            WHERE attrelid = ANY (ARRAY['purchases'::regclass, 'balances'::regclass, 'wallet_lots'::regclass,
                'wallet_history'::regclass]) AND atttypid = 'text'::regtype AND attnum > 0
                AND attcollation <> 'pg_catalog."C"'::regcollation
            """
        ).rows[0]
        #expect(try collations.int64("n") == 0, "every text column compares byte by byte")
        let options = try db.connection.execute(
            "SELECT array_to_string(reloptions, ',') AS options FROM pg_class WHERE oid = 'balances'::regclass"
        ).rows[0]
        #expect(try options.optionalString("options") == "fillfactor=70")
        #expect(try Self.entries(from: "wallet_history_entries", on: db.connection) == before)
        let rows = try db.connection.execute(
            "SELECT kind, key FROM wallet_history WHERE kind = 'credit'"
        ).rows.map { row throws(PostgresError) in try row.string("key") }
        #expect(rows == [p3], "the credit row whose time differs from its lot's stays a row")
        #expect(try db.count("wallet_history") == 4)
        #expect(try Self.pagedKeys("u1", limit: 2, on: db.connection) == [p3, "r1", "g1", "k1", p2, p1])
        #expect(try Self.pagedKeys("u2", limit: 2, on: db.connection) == [q1])
        // A credit after the upgrade is numbered after every entry before it.
        try db.applyResults(WalletStoreTests.purchase("p4"))
        #expect(try Self.pagedKeys("u1", limit: 50, on: db.connection).first == F.key("p4"))
        let numbers = try db.connection.execute(
            """
            SELECT (SELECT lot_history_seq FROM purchases WHERE credit_key = $1) AS new,
                (SELECT max(seq) FROM wallet_history_entries WHERE key <> $1) AS old
            """, [.text(F.key("p4"))]
        ).rows[0]
        #expect(try numbers.int64("new") > numbers.int64("old"))
    }
}
