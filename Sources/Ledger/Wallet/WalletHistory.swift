import Postgres
import ServiceSupport

/// A user's history (`GET /v1/users/{user_id}/history`): every credit, grant, spend, take-back, reversal and debt
/// repayment of their wallets, newest first, in pages. Entries are what the transactions that moved the units wrote,
/// numbered as written: `wallet_history` rows, the lots that carry their credit's entry (schema 11) and the
/// purchases that carry it with their untouched lot (schema 12), read as one (`wallet_history_entries`); a page's cursor is the number of its last entry, so entries written later
/// never push entries onto the next page. Numbers are taken before commit: one wallet's entries become visible in
/// order (its lock is held from before they are numbered), but across a user's wallets an entry can become visible
/// below entries already read (docs/CREDITING.md, "History").
enum WalletHistory {
    static let defaultLimit = 50
    static let maxLimit = 500

    /// One page as JSON (`{"user_id", "entries", "next_cursor"}`), newest first, entries before `cursor` (nil: the
    /// newest).
    static func pageJSON(userId: String, limit: Int, before cursor: Int64?, on connection: PostgresConnection)
        throws(PostgresError) -> String
    {
        let rows = try connection.execute(
            """
            SELECT seq, book, item, kind, key, credit_key, amount, balance_change, shortfall, note, at_ms
            FROM wallet_history_entries WHERE user_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3
            """, [.text(userId), .int(cursor ?? Int64.max), .int(Int64(limit + 1))]
        ).rows
        var entries: [String] = []
        var last: Int64?
        for row in rows.prefix(limit) {
            let kind = try row.string("kind")
            let note = try row.optionalString("note")
            entries.append(
                #"{"kind":\#(JSONText.quoted(kind)),"key":\#(JSONText.quoted(try row.string("key"))),"credit_key":\#(quotedOrNull(try row.optionalString("credit_key"))),"book":\#(JSONText.quoted(try row.string("book"))),"item":\#(JSONText.quoted(try row.string("item"))),"amount":\#(try row.int64("amount")),"balance_change":\#(try row.int64("balance_change")),"shortfall":\#(try row.int64("shortfall")),"reference":\#(quotedOrNull(kind == "spend" ? note : nil)),"reason":\#(quotedOrNull(kind == "grant" ? note : nil)),"at_ms":\#(try row.int64("at_ms"))}"#
            )
            last = try row.int64("seq")
        }
        let next = rows.count > limit ? last.map(Self.cursor) : nil
        return #"{"user_id":\#(JSONText.quoted(userId)),"entries":[\#(entries.joined(separator: ","))],"next_cursor":\#(quotedOrNull(next))}"#
    }

    /// The cursor after entry `seq`: opaque to clients (documented as "pass it back as given"), the entry's number
    /// written in decimal. Any such number is a valid place to continue from: a page is the entries before it.
    static func cursor(_ seq: Int64) -> String { String(seq) }

    /// The entry number a cursor names: 1 to 18 digits, no leading zero; nil otherwise.
    static func seq(fromCursor cursor: String) -> Int64? {
        guard (1...18).contains(cursor.utf8.count), cursor.first != "0",
            cursor.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        return Int64(cursor)
    }

    private static func quotedOrNull(_ value: String?) -> String { value.map(JSONText.quoted) ?? "null" }
}
