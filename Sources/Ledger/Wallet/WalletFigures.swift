import LedgerRules
import Postgres

/// What the wallets owe and could not take back now, per book and item, read every 30 s for the ledger's wallet
/// gauges: the counters say how many units refunds could not take over time, these say what is outstanding at this
/// moment. Per item because units of different items (gems, coins) do not add up to anything.
///
/// Read from `wallet_clawbacks`, whose `debt` and `unrecovered` sum per wallet to the `balances` columns of the same
/// names (the rules keep them equal in the same transactions). The debt query is served by the partial index
/// `wallet_clawbacks_owed` (rows with debt > 0 only), so its cost follows the wallets in debt, not the table; the
/// unrecovered sum scans `wallet_clawbacks` (one row per take-back of an item purchase, far fewer than `balances`;
/// about 80 ms per million rows on PostgreSQL 15, measured with EXPLAIN ANALYZE).
struct WalletFigures: Sendable, Equatable {
    /// A book and an item (items are those the product catalog credits, so they are few).
    struct Key: Sendable, Hashable, Comparable {
        var book: Book
        var item: String

        static func < (lhs: Key, rhs: Key) -> Bool {
            (lhs.book.rawValue, lhs.item) < (rhs.book.rawValue, rhs.item)
        }
    }

    struct Outstanding: Sendable, Equatable {
        /// Σ outstanding debt in the item (`LEDGER_CLAWBACK=debt`).
        var debtUnits: Double = 0
        /// Users with debt outstanding in the item.
        var usersInDebt: Double = 0
        /// Σ units of the item recorded unrecovered (`LEDGER_CLAWBACK=floor`) and not cancelled by a reversal or
        /// settled since.
        var unrecoveredUnits: Double = 0
    }

    /// Per book and item with something outstanding; any other reads all zero.
    var outstanding: [Key: Outstanding] = [:]

    func of(_ book: Book, item: String) -> Outstanding { outstanding[Key(book: book, item: item)] ?? Outstanding() }

    static func read(on connection: PostgresConnection) throws(PostgresError) -> WalletFigures {
        var figures = WalletFigures()
        // Sums as text: a numeric Σ of bigints may pass 64 bits, a gauge is a double anyway.
        for row in try connection.execute(
            """
            SELECT book, item, sum(debt)::text AS debt, count(DISTINCT user_id) AS users
            FROM wallet_clawbacks WHERE debt > 0 GROUP BY book, item
            """
        ).rows {
            guard let book = Book(rawValue: try row.string("book")) else { continue }
            let key = Key(book: book, item: try row.string("item"))
            figures.outstanding[key, default: Outstanding()].debtUnits = Double(try row.string("debt")) ?? 0
            figures.outstanding[key, default: Outstanding()].usersInDebt = Double(try row.int64("users"))
        }
        for row in try connection.execute(
            """
            SELECT book, item, sum(unrecovered)::text AS unrecovered FROM wallet_clawbacks WHERE unrecovered > 0
            GROUP BY book, item
            """
        ).rows {
            guard let book = Book(rawValue: try row.string("book")) else { continue }
            let key = Key(book: book, item: try row.string("item"))
            figures.outstanding[key, default: Outstanding()].unrecoveredUnits =
                Double(try row.string("unrecovered")) ?? 0
        }
        return figures
    }
}
