import Foundation
import Postgres
import ServiceSupport

/// A user's history (`GET /v1/users/{user_id}/history`): every credit, grant, spend, take-back, reversal and debt
/// repayment of their wallets, newest first, in pages. Entries are rows the transactions that moved the units wrote
/// (`wallet_history`), numbered as written; a page's cursor is the number of its last entry, so a page never shifts
/// when newer entries arrive.
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
            FROM wallet_history WHERE user_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3
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

    /// The opaque cursor after entry `seq`.
    static func cursor(_ seq: Int64) -> String {
        Data("h1:\(seq)".utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The entry number a cursor of `cursor(_:)` names; nil when it is not one.
    static func seq(fromCursor cursor: String) -> Int64? {
        guard !cursor.isEmpty, cursor.count <= 64,
            cursor.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else { return nil }
        var base64 = cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), let text = String(data: data, encoding: .utf8),
            text.hasPrefix("h1:"), let seq = Int64(text.dropFirst(3)), seq > 0, cursor == Self.cursor(seq)
        else { return nil }
        return seq
    }

    private static func quotedOrNull(_ value: String?) -> String { value.map(JSONText.quoted) ?? "null" }
}
