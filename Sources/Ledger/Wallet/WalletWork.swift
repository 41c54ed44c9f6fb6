import LedgerRules
import Postgres

/// What `WalletWork.writes(copyingFrom:)` sends: copies (`PostgresSession.copy`, outside a pipeline) and statements
/// (in their order, in one pipeline).
struct WalletWrites {
    var copies: [(sql: String, rows: PostgresCopyRows)]
    var statements: [(sql: String, parameters: [PostgresValue])]
    /// New purchase lots nothing drew on yet, which their purchase rows carry instead of a `wallet_lots` row
    /// (schema 12), in the order of their credits' history entries; empty unless the caller writes them
    /// (`writes(copyingFrom:purchasesCarryLots:)`).
    var untouchedLots: [(wallet: WalletKey, lot: WalletLot)] = []
    /// Whether `untouchedLots` carry their credits' history entries (the write's history is those credits alone):
    /// the caller numbers them from the history's sequence while their wallets are locked, in their order.
    var untouchedLotsCarryEntries = false
}

/// A user's wallet of one item in one book: the lock order of everything that reads or changes a wallet (its
/// `balances` row is the wallet's lock, taken in this order).
struct WalletKey: Hashable, Comparable, Sendable {
    let user: String
    let book: Book
    let item: String

    static func < (lhs: WalletKey, rhs: WalletKey) -> Bool {
        (lhs.user, lhs.book.rawValue, lhs.item) < (rhs.user, rhs.book.rawValue, rhs.item)
    }
}

/// One row of a user's history (`wallet_history`), written in the transaction that moved the units.
struct WalletHistoryEntry: Sendable, Equatable {
    enum Kind: String, Sendable {
        case credit, grant, spend, debit, upgrade, recredit
        case debtRepayment = "debt_repayment"
    }

    let wallet: WalletKey
    let kind: Kind
    /// The purchase's `credit_key` (a credit, an upgrade), the `Idempotency-Key` (a spend, a grant), the event's
    /// `event_id` (a debit, a recredit), the debt's clawback key (a repayment).
    let key: String
    /// The purchase concerned (credited, taken back, given back, or whose debt is repaid); nil for spends and grants.
    let creditKey: String?
    /// Units the entry is about (always ≥ 0).
    let amount: Int64
    /// What the balance changed by.
    let balanceChange: Int64
    /// Units a take-back could not take (`unrecovered` or debt).
    var shortfall: Int64 = 0
    /// A spend's `reference`, a grant's `reason`.
    var note: String? = nil
    let atMs: Int64
}

/// The wallets one transaction touches, as read (locked, first) and as the rules leave them, and the writes that
/// make the database say the same: new and changed lots, clawbacks and their takes, spend attributions, the balances
/// rows' changes (in key order) and history rows, each one statement for the whole transaction.
///
/// A wallet that was not read starts empty (balance 0): adding a lot to it is what the balances upsert adds, written
/// without a read. Take-backs, reversals and spends need the wallet read.
struct WalletWork {
    /// As read (nil: not read).
    private(set) var read: [WalletKey: Wallet] = [:]
    private(set) var current: [WalletKey: Wallet] = [:]
    var history: [WalletHistoryEntry] = []
    /// Spend attributions: (user, Idempotency-Key, lot share).
    var spends: [(user: String, key: String, share: LotShare)] = []
    /// Lots read from their purchase rows (schema 12: no `wallet_lots` row yet): the first change inserts the row.
    private(set) var untouchedRead: Set<LotAddress> = []

    /// The wallet `key` as it stands in this transaction (empty when neither read nor changed).
    func wallet(_ key: WalletKey) -> Wallet { current[key] ?? read[key] ?? Wallet() }

    mutating func update(_ key: WalletKey, _ change: (inout Wallet) -> Void) {
        var wallet = wallet(key)
        change(&wallet)
        current[key] = wallet
    }

    func wasRead(_ key: WalletKey) -> Bool { read[key] != nil }

    /// History rows of the debt a new lot of `wallet` repaid (the lot's own credit or grant row comes just before).
    mutating func recordRepayments(_ repaid: [(clawback: String, amount: Int64)], of wallet: WalletKey, atMs: Int64) {
        for repayment in repaid {
            history.append(
                WalletHistoryEntry(
                    wallet: wallet, kind: .debtRepayment, key: repayment.clawback,
                    creditKey: self.wallet(wallet).clawbacks[repayment.clawback]?.creditKey, amount: repayment.amount,
                    balanceChange: 0, atMs: atMs))
        }
    }

    // MARK: Reading

    /// The statements that lock the wallets `keys` (their balances rows, in key order: the lock order of every
    /// transaction touching wallets) and read their lots with units remaining, their clawbacks with debt
    /// outstanding, for a reversal of the purchases `reversing` their refunds not reversed yet with their takes, the
    /// lots those took from and the refunds of those lots' purchases still short (what the restored units settle
    /// first), and the clawbacks `takingBack` names (user, clawback key) if recorded already: a take-back is taken
    /// once against the database, not only against what else was read. Run them in this order in one pipeline (the
    /// lock first).
    static func readStatements(
        _ keys: [WalletKey], reversing: [String] = [], takingBack: [(user: String, key: String)] = []
    ) -> [(sql: String, parameters: [PostgresValue])] {
        let sorted = keys.sorted()
        let wallets: [PostgresValue] = [
            .textArray(sorted.map(\.user)), .textArray(sorted.map(\.book.rawValue)), .textArray(sorted.map(\.item)),
        ]
        return [
            (lockBalances, wallets),
            reversing.isEmpty ? (remainingLots, wallets) : (remainingAndTakenLots, wallets + [.textArray(reversing)]),
            (
                clawbacks,
                wallets + [.textArray(reversing), .textArray(takingBack.map(\.user)), .textArray(takingBack.map(\.key))]
            ),
        ]
    }

    static let lockBalances = """
        SELECT b.user_id, b.book, b.item, b.amount, b.debt, b.unrecovered
        FROM (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) AS w(u, b, i) ORDER BY 1, 2, 3) AS w,
        LATERAL (SELECT * FROM balances WHERE user_id = w.u AND book = w.b AND item = w.i FOR UPDATE) AS b
        """

    static let lotColumns = "l.user_id, l.lot_key, l.book, l.item, l.kind, l.amount, l.spent, l.taken, l.covered, l.added_at_ms"

    /// A wallet's lots with units remaining: its lot rows, and its purchases' untouched lots without one (schema
    /// 12, `wallet_lot_states`), found by their index (`purchases_owner` on (owner, lot_untouched), schema 13: the
    /// owner's flagged entries only).
    static let remainingLots = """
        SELECT \(lotColumns), l.untouched
        FROM unnest($1::text[], $2::text[], $3::text[]) AS w(u, b, i),
        LATERAL (
            SELECT *, false AS untouched FROM wallet_lots WHERE user_id = w.u AND book = w.b AND item = w.i
                AND \(WalletSchema.hasRemaining)
            UNION ALL
            SELECT p.owner, p.credit_key, p.book, p.grant_name, 'purchase', p.lot_amount, 0, 0, 0, p.lot_added_at_ms,
                NULL, true
            FROM purchases p WHERE p.owner = w.u AND p.lot_untouched AND p.book = w.b AND p.grant_name = w.i
                AND p.lot_amount IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM wallet_lots o WHERE o.user_id = p.owner AND o.lot_key = p.credit_key)
        ) AS l
        """

    /// `remainingLots` and the lots the purchases `$4`'s refunds took from (rows: a take writes its lot's row).
    static let remainingAndTakenLots = """
        \(remainingLots)
        UNION
        SELECT \(lotColumns), false FROM wallet_clawbacks c
        JOIN wallet_takes t ON t.user_id = c.user_id AND t.clawback_key = c.clawback_key
        JOIN wallet_lots l ON l.user_id = t.user_id AND l.lot_key = t.lot_key
        WHERE c.credit_key = ANY($4::text[]) AND c.kind = 'refund' AND NOT c.reversed
        """

    static let clawbacks = """
        WITH wanted AS (
            SELECT c.user_id, c.clawback_key FROM unnest($1::text[], $2::text[], $3::text[]) AS w(u, b, i)
            JOIN wallet_clawbacks c ON c.user_id = w.u AND c.book = w.b AND c.item = w.i AND c.debt > 0
            UNION
            SELECT user_id, clawback_key FROM wallet_clawbacks
            WHERE credit_key = ANY($4::text[]) AND kind = 'refund' AND NOT reversed
            UNION
            SELECT o.user_id, o.clawback_key FROM wallet_clawbacks c
            JOIN wallet_takes t ON t.user_id = c.user_id AND t.clawback_key = c.clawback_key
            JOIN wallet_clawbacks o ON o.user_id = t.user_id AND o.credit_key = t.lot_key AND o.kind = 'refund'
                AND NOT o.reversed AND (o.debt > 0 OR o.unrecovered > 0)
            WHERE c.credit_key = ANY($4::text[]) AND c.kind = 'refund' AND NOT c.reversed
            UNION
            SELECT c.user_id, c.clawback_key FROM unnest($5::text[], $6::text[]) AS k(u, k)
            JOIN wallet_clawbacks c ON c.user_id = k.u AND c.clawback_key = k.k)
        SELECT c.user_id, c.clawback_key, c.book, c.item, c.credit_key, c.kind, c.requested, c.debt, c.unrecovered,
            c.reversed, c.at_ms, t.lot_key AS take_lot, t.amount AS take_amount
        FROM wanted w JOIN wallet_clawbacks c ON c.user_id = w.user_id AND c.clawback_key = w.clawback_key
        LEFT JOIN wallet_takes t ON t.user_id = c.user_id AND t.clawback_key = c.clawback_key
        ORDER BY c.user_id, c.clawback_key, t.lot_key
        """

    /// Records the results of `readStatements(keys, ...)` (in their order) as the wallets read.
    ///
    /// A wallet of `keys` without a `balances` row had nothing to lock. Its lots and clawbacks are read by later
    /// statements; when any appear, a transaction that created the wallet committed in between, and what was read
    /// is no view to decide on: lots read without the wallet's lock may already be changed by a transaction that
    /// holds it (a spend decided on them would overdraw), and reading the wallet empty instead would take nothing back
    /// of a purchase refunded just after it was credited. So the read is refused as a serialization failure
    /// (`40001`): the caller rolls back and applies the batch again, and the lock then finds the row.
    /// - Throws: `PostgresError`: `40001` for a wallet created between the lock and the reads; a row it cannot read.
    mutating func cacheRead(_ keys: [WalletKey], _ results: ArraySlice<PostgresResult>) throws(PostgresError) {
        var wallets: [WalletKey: Wallet] = [:]
        for key in keys { wallets[key] = Wallet() }
        var results = results
        var unlocked = Set(keys)
        for row in results.removeFirst().rows {
            let key = try Self.walletKey(row)
            unlocked.remove(key)
            wallets[key] = Wallet(
                balance: try row.int64("amount"), debt: try row.int64("debt"), unrecovered: try row.int64("unrecovered"))
        }
        for row in results.removeFirst().rows {
            let key = try Self.walletKey(row)
            if unlocked.contains(key) { throw Self.createdAfterLock(key) }
            guard let kind = LotKind(rawValue: try row.string("kind")) else { throw Self.unknown("lot kind", row) }
            let lot = WalletLot(
                key: try row.string("lot_key"), kind: kind, amount: try row.int64("amount"),
                spent: try row.int64("spent"), taken: try row.int64("taken"), covered: try row.int64("covered"),
                addedAtMs: try row.int64("added_at_ms"))
            wallets[key, default: Wallet()].lots[lot.key] = lot
            if try row.bool("untouched") { untouchedRead.insert(LotAddress(user: key.user, key: lot.key)) }
        }
        for row in results.removeFirst().rows {
            let key = try Self.walletKey(row)
            if unlocked.contains(key) { throw Self.createdAfterLock(key) }
            let clawbackKey = try row.string("clawback_key")
            var clawback = wallets[key]?.clawbacks[clawbackKey]
            if clawback == nil {
                guard let kind = ClawbackKind(rawValue: try row.string("kind")) else {
                    throw Self.unknown("clawback kind", row)
                }
                clawback = Clawback(
                    key: clawbackKey, creditKey: try row.optionalString("credit_key"), kind: kind,
                    requested: try row.int64("requested"), debt: try row.int64("debt"),
                    unrecovered: try row.int64("unrecovered"), reversed: try row.bool("reversed"),
                    atMs: try row.int64("at_ms"))
            }
            if let lot = try row.optionalString("take_lot") {
                clawback?.takes.append(LotShare(lot: lot, amount: try row.int64("take_amount")))
            }
            wallets[key, default: Wallet()].clawbacks[clawbackKey] = clawback
        }
        for (key, wallet) in wallets {
            read[key] = wallet
            current[key] = nil
        }
    }

    private static func createdAfterLock(_ key: WalletKey) -> PostgresError {
        PostgresError(
            sqlState: .serializationFailure,
            message: "a wallet of \(key.item) was created by another transaction after this one locked its wallets; "
                + "applying the batch again", isConnectionBroken: false)
    }

    private static func walletKey(_ row: PostgresRow) throws(PostgresError) -> WalletKey {
        guard let book = Book(rawValue: try row.string("book")) else { throw unknown("book", row) }
        return WalletKey(user: try row.string("user_id"), book: book, item: try row.string("item"))
    }

    private static func unknown(_ what: String, _ row: PostgresRow) -> PostgresError {
        PostgresError(sqlState: nil, message: "a wallet row has an unknown \(what)", isConnectionBroken: false)
    }

    // MARK: Writing

    /// The statements that write every change since the wallets were read (none when nothing changed). The balances
    /// upsert (in key order) answers the wallets it left with debt outstanding (`user_id`, `book`, `item`): a lot
    /// written without reading its wallet repays that debt once the wallet is read.
    func writeStatements() -> [(sql: String, parameters: [PostgresValue])] {
        writes(copyingFrom: .max).statements
    }

    /// Every change since the wallets were read, as `writeStatements()` writes it, except that new lots and history
    /// rows are copied (`COPY ... FROM STDIN (FORMAT binary)`) when there are at least `threshold` of them: a batch
    /// of results writes a lot per credit (which carries the credit's history entry, schema 11), and
    /// `INSERT ... SELECT unnest(arrays)` cost PostgreSQL a tuplestore of the unnested arrays, a plan and a
    /// row-at-a-time insert for each (docs/BENCHMARKS.md, "The wallet's writes by COPY"). Lots and history rows refer
    /// to nothing; run the copies after the statements, so that an entry is numbered while the balances upsert holds
    /// its wallet's lock (`BatchWork.flush`).
    ///
    /// With `purchasesCarryLots` (schema 12), new purchase lots nothing drew on are not written here: they come back
    /// as `untouchedLots`, for their purchase rows to carry. Without it (spends and grants, whose new lots are
    /// grants; a debt repaid after the credits were written) every new lot is a row. A lot read from its purchase row
    /// that changed gets its row now, with the purchase's values and what changed (its entry stays the purchase's).
    func writes(copyingFrom threshold: Int, purchasesCarryLots: Bool = false) -> WalletWrites {
        var newLots: [(WalletKey, WalletLot)] = []
        var changedLots: [(WalletKey, WalletLot)] = []
        var firstTouched: [(WalletKey, WalletLot)] = []
        var newClawbacks: [(WalletKey, Clawback)] = []
        var changedClawbacks: [(WalletKey, Clawback)] = []
        var newTakes: [(WalletKey, String, LotShare)] = []
        var balanceChanges: [(WalletKey, amount: Int64, debt: Int64, unrecovered: Int64)] = []
        // The wallets' positions sorted by key, not the (key, wallet) pairs: a comparison of pairs copied and
        // destroyed both wallets (~550 instructions each, ~18 k per result for a batch of 500 credits:
        // bench/ledger-callgrind.sh), and a sort of the keys alone would hash each again to find its wallet.
        for index in current.indices.sorted(by: { current.keys[$0] < current.keys[$1] }) {
            let (key, wallet) = current[index]
            let before = read[key] ?? Wallet()
            for lot in wallet.lots.values.sorted(by: { $0.key < $1.key }) {
                if let old = before.lots[lot.key] {
                    if old == lot { continue }
                    if untouchedRead.contains(LotAddress(user: key.user, key: lot.key)) {
                        firstTouched.append((key, lot))
                    } else {
                        changedLots.append((key, lot))
                    }
                } else {
                    newLots.append((key, lot))
                }
            }
            for clawback in wallet.clawbacks.values.sorted(by: { $0.key < $1.key }) {
                let old = before.clawbacks[clawback.key]
                if old == nil {
                    newClawbacks.append((key, clawback))
                } else if old != clawback {
                    changedClawbacks.append((key, clawback))
                }
                for take in clawback.takes.dropFirst(old?.takes.count ?? 0) {
                    newTakes.append((key, clawback.key, take))
                }
            }
            let change = (
                key, wallet.balance - before.balance, wallet.debt - before.debt, wallet.unrecovered - before.unrecovered
            )
            if change.1 != 0 || change.2 != 0 || change.3 != 0 { balanceChanges.append(change) }
        }
        var statements: [(sql: String, parameters: [PostgresValue])] = []
        var copies: [(sql: String, rows: PostgresCopyRows)] = []
        /// The statement that writes `rows`; none when there are none.
        func write<Row>(_ rows: [Row], _ sql: String, _ parameters: ([Row]) -> [PostgresValue]) {
            if !rows.isEmpty { statements.append((sql, parameters(rows))) }
        }
        // A write whose history is its new lots' credits alone lets each lot carry its entry (schema 11); any other
        // keeps its entries as rows, so the numbers follow the order the entries were made in. Lots that carry
        // entries are written where the history rows were, after the balances upsert: numbered while it holds their
        // wallets' locks.
        let creditLots = Self.lotsCarryingEntries(newLots, history)
        let lotsCarryEntries = creditLots != nil
        if let creditLots { newLots = creditLots }
        var untouchedLots: [(wallet: WalletKey, lot: WalletLot)] = []
        if purchasesCarryLots {
            // Appended one by one: filtering into the labelled tuple type cast every element at run time.
            for (wallet, lot) in newLots where lot.kind == .purchase && lot.remaining == lot.amount {
                untouchedLots.append((wallet: wallet, lot: lot))
            }
            newLots.removeAll { $0.1.kind == .purchase && $0.1.remaining == $0.1.amount }
        }
        // A new lot some write already drew on is a row; if the history is the credits alone, the purchases carry
        // every entry (a credits-only write draws on no lot) and no row is left here.
        let rowsCarryEntries = lotsCarryEntries && !purchasesCarryLots
        if newLots.count >= threshold {
            copies.append(
                rowsCarryEntries
                    ? (Self.lotsCopy, Self.copyRows(newLots, withoutEntries: false))
                    : (Self.lotsWithoutEntriesCopy, Self.copyRows(newLots, withoutEntries: true)))
        } else if !rowsCarryEntries {
            write(newLots, Self.lotsWithoutEntriesInsert, Self.lotsParameters)
        }
        write(firstTouched, Self.lotsWithoutEntriesInsert, Self.lotsParameters)
        write(firstTouched, Self.untouchedLotsTaken) { rows in
            [.textArray(rows.map(\.1.key)), .textArray(rows.map(\.0.user))]
        }
        write(
            changedLots,
            """
            UPDATE wallet_lots l SET spent = u.spent, taken = u.taken, covered = u.covered
            FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[])
                AS u(user_id, lot_key, spent, taken, covered)
            WHERE l.user_id = u.user_id AND l.lot_key = u.lot_key
            """
        ) { rows in
            [
                .textArray(rows.map(\.0.user)), .textArray(rows.map(\.1.key)),
                .intArray(rows.map(\.1.spent)), .intArray(rows.map(\.1.taken)),
                .intArray(rows.map(\.1.covered)),
            ]
        }
        write(
            newClawbacks,
            """
            INSERT INTO wallet_clawbacks (user_id, clawback_key, book, item, credit_key, kind, requested, debt,
                unrecovered, reversed, at_ms)
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                $7::bigint[], $8::bigint[], $9::bigint[], $10::boolean[], $11::bigint[])
            """
        ) { rows in
            [
                .textArray(rows.map(\.0.user)), .textArray(rows.map(\.1.key)),
                .textArray(rows.map(\.0.book.rawValue)), .textArray(rows.map(\.0.item)),
                .nullableArray(rows.map(\.1.creditKey)), .textArray(rows.map(\.1.kind.rawValue)),
                .intArray(rows.map(\.1.requested)), .intArray(rows.map(\.1.debt)),
                .intArray(rows.map(\.1.unrecovered)),
                .nullableArray(rows.map { $0.1.reversed ? "t" : "f" }),
                .intArray(rows.map(\.1.atMs)),
            ]
        }
        write(
            changedClawbacks,
            """
            UPDATE wallet_clawbacks c SET debt = u.debt, unrecovered = u.unrecovered, reversed = u.reversed
            FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::boolean[])
                AS u(user_id, clawback_key, debt, unrecovered, reversed)
            WHERE c.user_id = u.user_id AND c.clawback_key = u.clawback_key
            """
        ) { rows in
            [
                .textArray(rows.map(\.0.user)), .textArray(rows.map(\.1.key)),
                .intArray(rows.map(\.1.debt)), .intArray(rows.map(\.1.unrecovered)),
                .nullableArray(rows.map { $0.1.reversed ? "t" : "f" }),
            ]
        }
        write(
            newTakes,
            """
            INSERT INTO wallet_takes (user_id, clawback_key, lot_key, amount)
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
            ON CONFLICT (user_id, clawback_key, lot_key) DO UPDATE SET amount = wallet_takes.amount + EXCLUDED.amount
            """
        ) { rows in
            [
                .textArray(rows.map(\.0.user)), .textArray(rows.map(\.1)),
                .textArray(rows.map(\.2.lot)), .intArray(rows.map(\.2.amount)),
            ]
        }
        write(
            spends,
            """
            INSERT INTO wallet_spends (user_id, idempotency_key, lot_key, amount)
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
            """
        ) { rows in
            [
                .textArray(rows.map(\.user)), .textArray(rows.map(\.key)),
                .textArray(rows.map(\.share.lot)), .intArray(rows.map(\.share.amount)),
            ]
        }
        write(balanceChanges, Self.balancesUpsert) { rows in
            [
                .textArray(rows.map(\.0.user)), .textArray(rows.map(\.0.book.rawValue)),
                .textArray(rows.map(\.0.item)), .intArray(rows.map(\.amount)),
                .intArray(rows.map(\.debt)), .intArray(rows.map(\.unrecovered)),
            ]
        }
        if lotsCarryEntries {
            if rowsCarryEntries, newLots.count < threshold { write(newLots, Self.lotsInsert, Self.lotsParameters) }
        } else {
            if history.count >= threshold {
                copies.append((Self.historyCopy, Self.copyRows(history)))
            } else {
                write(history, Self.historyInsert, Self.historyParameters)
            }
        }
        return WalletWrites(
            copies: copies, statements: statements, untouchedLots: untouchedLots,
            untouchedLotsCarryEntries: lotsCarryEntries && !untouchedLots.isEmpty)
    }

    /// `newLots` in the order of `history`'s entries when every entry is a credit that one of them can carry (the
    /// same wallet, key, amount and time, every lot a purchase credited by one entry: schema 11's view derives the
    /// entry from exactly those); nil otherwise, and when there is no entry to carry.
    static func lotsCarryingEntries(_ newLots: [(WalletKey, WalletLot)], _ history: [WalletHistoryEntry])
        -> [(WalletKey, WalletLot)]?
    {
        guard !history.isEmpty, history.count == newLots.count else { return nil }
        var lots: [LotAddress: (WalletKey, WalletLot)] = [:]
        lots.reserveCapacity(newLots.count)
        for (wallet, lot) in newLots { lots[LotAddress(user: wallet.user, key: lot.key)] = (wallet, lot) }
        var ordered: [(WalletKey, WalletLot)] = []
        ordered.reserveCapacity(newLots.count)
        for entry in history {
            guard entry.kind == .credit, entry.creditKey == entry.key, entry.shortfall == 0, entry.note == nil,
                let (wallet, lot) = lots.removeValue(forKey: LotAddress(user: entry.wallet.user, key: entry.key)),
                wallet == entry.wallet, lot.kind == .purchase, lot.amount == entry.amount, lot.remaining == lot.amount,
                entry.balanceChange == entry.amount, lot.addedAtMs == entry.atMs
            else { return nil }
            ordered.append((wallet, lot))
        }
        return ordered
    }

    /// A lot's primary key.
    struct LotAddress: Hashable {
        let user: String
        let key: String
    }

    /// New lots, each carrying its credit's history entry: `history_seq` is left to its default, the history's next
    /// number, taken in the rows' order.
    static let lotsInsert = """
        INSERT INTO wallet_lots (user_id, lot_key, book, item, kind, amount, spent, taken, covered, added_at_ms)
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[],
            $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[])
        """

    /// New lots whose entries (if any) are history rows.
    /// The purchases whose lots got their rows now: no longer untouched (their entries leave the `lot_untouched`
    /// range of `purchases_owner`).
    static let untouchedLotsTaken = """
        UPDATE purchases p SET lot_untouched = false
        FROM unnest($1::text[], $2::text[]) AS u(credit_key, owner)
        WHERE p.credit_key = u.credit_key AND p.owner = u.owner
        """

    static let lotsWithoutEntriesInsert = """
        INSERT INTO wallet_lots (user_id, lot_key, book, item, kind, amount, spent, taken, covered, added_at_ms,
            history_seq)
        SELECT *, NULL::bigint FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[],
            $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[])
        """

    private static func lotsParameters(_ rows: [(WalletKey, WalletLot)]) -> [PostgresValue] {
        [
            .textArray(rows.map(\.0.user)), .textArray(rows.map(\.1.key)),
            .textArray(rows.map(\.0.book.rawValue)), .textArray(rows.map(\.0.item)),
            .textArray(rows.map(\.1.kind.rawValue)), .intArray(rows.map(\.1.amount)),
            .intArray(rows.map(\.1.spent)), .intArray(rows.map(\.1.taken)),
            .intArray(rows.map(\.1.covered)), .intArray(rows.map(\.1.addedAtMs)),
        ]
    }

    static let historyInsert = """
        INSERT INTO wallet_history (user_id, book, item, kind, key, credit_key, amount, balance_change,
            shortfall, note, at_ms)
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
            $7::bigint[], $8::bigint[], $9::bigint[], $10::text[], $11::bigint[])
        """

    private static func historyParameters(_ rows: [WalletHistoryEntry]) -> [PostgresValue] {
        [
            .textArray(rows.map(\.wallet.user)), .textArray(rows.map(\.wallet.book.rawValue)),
            .textArray(rows.map(\.wallet.item)), .textArray(rows.map(\.kind.rawValue)),
            .textArray(rows.map(\.key)), .nullableArray(rows.map(\.creditKey)),
            .intArray(rows.map(\.amount)), .intArray(rows.map(\.balanceChange)),
            .intArray(rows.map(\.shortfall)), .nullableArray(rows.map(\.note)),
            .intArray(rows.map(\.atMs)),
        ]
    }

    /// `lotsInsert` by copy.
    static let lotsCopy = """
        COPY wallet_lots (user_id, lot_key, book, item, kind, amount, spent, taken, covered, added_at_ms)
        FROM STDIN (FORMAT binary)
        """

    /// `lotsWithoutEntriesInsert` by copy.
    static let lotsWithoutEntriesCopy = """
        COPY wallet_lots (user_id, lot_key, book, item, kind, amount, spent, taken, covered, added_at_ms, history_seq)
        FROM STDIN (FORMAT binary)
        """

    static let historyCopy = """
        COPY wallet_history (user_id, book, item, kind, key, credit_key, amount, balance_change, shortfall, note, at_ms)
        FROM STDIN (FORMAT binary)
        """

    /// New lots in the columns of `lotsCopy`, or of `lotsWithoutEntriesCopy` (`history_seq` NULL).
    private static func copyRows(_ lots: [(WalletKey, WalletLot)], withoutEntries: Bool) -> PostgresCopyRows {
        var rows = PostgresCopyRows(reservingBytes: lots.count * 164)
        for (wallet, lot) in lots {
            rows.startRow(fields: withoutEntries ? 11 : 10)
            rows.text(wallet.user)
            rows.text(lot.key)
            rows.text(wallet.book.rawValue)
            rows.text(wallet.item)
            rows.text(lot.kind.rawValue)
            rows.int64(lot.amount)
            rows.int64(lot.spent)
            rows.int64(lot.taken)
            rows.int64(lot.covered)
            rows.int64(lot.addedAtMs)
            if withoutEntries { rows.int64(nil) }
        }
        return rows
    }

    /// History rows in the columns of `historyCopy`.
    private static func copyRows(_ history: [WalletHistoryEntry]) -> PostgresCopyRows {
        var rows = PostgresCopyRows(reservingBytes: history.count * 180)
        for entry in history {
            rows.startRow(fields: 11)
            rows.text(entry.wallet.user)
            rows.text(entry.wallet.book.rawValue)
            rows.text(entry.wallet.item)
            rows.text(entry.kind.rawValue)
            rows.text(entry.key)
            rows.text(entry.creditKey)
            rows.int64(entry.amount)
            rows.int64(entry.balanceChange)
            rows.int64(entry.shortfall)
            rows.text(entry.note)
            rows.int64(entry.atMs)
        }
        return rows
    }

    /// The balances rows' changes, in key order (two transactions changing the same wallets lock them in the same
    /// order); answers the wallets left with debt outstanding.
    static let balancesUpsert = """
        WITH changed AS (
            INSERT INTO balances (user_id, book, item, amount, debt, unrecovered)
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[])
            ORDER BY 1, 2, 3
            ON CONFLICT (user_id, book, item) DO UPDATE SET amount = balances.amount + EXCLUDED.amount,
                debt = balances.debt + EXCLUDED.debt, unrecovered = balances.unrecovered + EXCLUDED.unrecovered
            RETURNING user_id, book, item, debt)
        SELECT user_id, book, item FROM changed WHERE debt > 0
        """
}
