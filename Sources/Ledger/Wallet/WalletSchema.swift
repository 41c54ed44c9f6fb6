/// Schema version 6: the wallet (docs/CREDITING.md, "The wallet"). Every item credit becomes a lot of its owner's
/// wallet (user, book, item); spends consume lots first in, first out and record what they consumed; take-backs
/// (refunds, upgrades) record what they took from which lot and what they could not. `balances` stays the one number
/// users read, with the wallet's outstanding `debt` and `unrecovered` units beside it, kept equal to Σ remaining − debt
/// in the same transactions.
///
/// The back-fill turns what the ledger held into lots: one per credited item purchase (what it credited, less what
/// refunds and upgrades took back then, recorded as takes of that purchase so that a later reversal gives them back);
/// a balance lower than its lots hold was spent by the app outside the ledger (there was no spend API), counted as
/// spent first in, first out; a balance higher than its lots (set by hand) becomes an opening lot of the difference;
/// a negative balance (the old signed rule) becomes an opening debt. Each wallet's history starts with its balance.
enum WalletSchema {
    /// The lot columns' condition "units remaining", written exactly as the partial index's predicate (the planner
    /// uses the index only for the same expression).
    static let hasRemaining = "spent + taken + covered < amount"

    /// Schema version 10: the lots with units remaining indexed by wallet alone. Version 6 indexed them by (user,
    /// book, item, added_at_ms, lot_key), but nothing reads them in that order (`WalletRules` orders a wallet's lots
    /// itself) or by those last two columns, and every credit's lot paid for comparing them on insert: a results
    /// batch's lots cost PostgreSQL 5 columns of comparisons each where 3 find the same rows (docs/BENCHMARKS.md,
    /// "The wallet's writes by COPY"). Index only: no row changes.
    static let remainingByWallet: [String] = [
        "DROP INDEX wallet_lots_remaining",
        "CREATE INDEX wallet_lots_remaining ON wallet_lots (user_id, book, item) WHERE \(hasRemaining)",
    ]

    /// Schema version 11: a credit's history entry is its lot. Every credit wrote a lot and a `wallet_history` row
    /// that said nothing the lot does not (kind credit, key and credit key the lot's key, amount and balance change
    /// its amount, time its time): a second copied row and index entry per result (docs/BENCHMARKS.md, "A credit's
    /// history entry is its lot"). A lot written by a batch whose history entries are its credits alone takes its
    /// entry's number from the history's own sequence (`history_seq`, by default: the copy omits it); any other lot
    /// has none, and its write's entries stay rows as before (`WalletWork.writes(copyingFrom:)`), so entries keep the
    /// order they were written in. The history reads `wallet_history_entries`: the rows and the lots that carry an
    /// entry, in one order of numbers.
    ///
    /// Existing credit rows move onto their lots (same number, same fields; a row that differs from its lot in
    /// anything stays a row): no entry is lost or renumbered, so cursors handed out before stay valid. The column is
    /// added without a default first (no table rewrite), then given the sequence as its default.
    static let creditEntriesFromLots: [String] = [
        "ALTER TABLE wallet_lots ADD COLUMN history_seq bigint",
        """
        DO $$ BEGIN
            EXECUTE format('ALTER TABLE wallet_lots ALTER COLUMN history_seq SET DEFAULT nextval(%L::regclass)',
                pg_get_serial_sequence('wallet_history', 'seq'));
        END $$
        """,
        """
        UPDATE wallet_lots l SET history_seq = h.seq FROM wallet_history h
        WHERE h.kind = 'credit' AND h.user_id = l.user_id AND h.key = l.lot_key AND h.credit_key = l.lot_key
            AND h.book = l.book AND h.item = l.item AND h.amount = l.amount AND h.balance_change = l.amount
            AND h.shortfall = 0 AND h.note IS NULL AND h.at_ms = l.added_at_ms AND l.kind = 'purchase'
        """,
        """
        DELETE FROM wallet_history h USING wallet_lots l
        WHERE h.kind = 'credit' AND l.user_id = h.user_id AND l.history_seq = h.seq
        """,
        """
        CREATE VIEW wallet_history_entries AS
        SELECT user_id, seq, book, item, kind, key, credit_key, amount, balance_change, shortfall, note, at_ms
        FROM wallet_history
        UNION ALL
        SELECT user_id, history_seq, book, item, 'credit', lot_key, lot_key, amount, amount, 0, NULL, added_at_ms
        FROM wallet_lots WHERE history_seq IS NOT NULL
        """,
    ]

    /// Schema version 12: a purchase's lot is written when something first draws on it. A credit's lot repeated its
    /// purchase row (owner, key, book, item, amount, time) and added three counters that stay zero until a spend, a
    /// take-back, a reversal or a debt covering touches it: a second copied row and two index entries per result
    /// (docs/BENCHMARKS.md, "Lazy lots (schema 12)"). Since version 12 the purchase row carries its untouched lot
    /// (`lot_amount`, `lot_added_at_ms`) and, when the lot carried its credit's history entry, that entry's number
    /// (`lot_history_seq`, taken from the history's sequence while the wallet is locked, as before); the first
    /// write that changes the lot inserts its `wallet_lots` row with the purchase's values, in the same transaction,
    /// and from then on the row is the lot (the purchase keeps its entry's number: the row's `history_seq` stays
    /// NULL) and clears the purchase's `lot_untouched`, so that a wallet's read finds only the untouched lots by
    /// their index (`purchases_untouched_lots`), not every purchase its owner made. `wallet_lot_states` reads both:
    /// every lot row, and every purchase's untouched lot without one.
    ///
    /// Nothing existing moves: lots written before version 12 stay rows (with their entries' numbers), purchases
    /// credited before have no lot of their own to carry. Columns without defaults: no table rewrite.
    static let lotsOnFirstTouch: [String] = [
        """
        ALTER TABLE purchases ADD COLUMN lot_amount bigint CHECK (lot_amount > 0), ADD COLUMN lot_added_at_ms bigint,
            ADD COLUMN lot_history_seq bigint, ADD COLUMN lot_untouched boolean
        """,
        // The untouched lots of an owner, by index: without it a wallet's read scanned every purchase its owner ever
        // made (a player with thousands of spent purchases read them all at every spend).
        "CREATE INDEX purchases_untouched_lots ON purchases (owner) WHERE lot_untouched",
        """
        CREATE VIEW wallet_lot_states AS
        SELECT user_id, lot_key, book, item, kind, amount, spent, taken, covered, added_at_ms, false AS untouched
        FROM wallet_lots
        UNION ALL
        SELECT p.owner, p.credit_key, p.book, p.grant_name, 'purchase', p.lot_amount, 0, 0, 0, p.lot_added_at_ms, true
        FROM purchases p
        WHERE p.lot_untouched AND p.lot_amount IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM wallet_lots l WHERE l.user_id = p.owner AND l.lot_key = p.credit_key)
        """,
        """
        CREATE OR REPLACE VIEW wallet_history_entries AS
        SELECT user_id, seq, book, item, kind, key, credit_key, amount, balance_change, shortfall, note, at_ms
        FROM wallet_history
        UNION ALL
        SELECT user_id, history_seq, book, item, 'credit', lot_key, lot_key, amount, amount, 0, NULL, added_at_ms
        FROM wallet_lots WHERE history_seq IS NOT NULL
        UNION ALL
        SELECT owner, lot_history_seq, book, grant_name, 'credit', credit_key, credit_key, lot_amount, lot_amount, 0,
            NULL, lot_added_at_ms
        FROM purchases WHERE lot_history_seq IS NOT NULL
        """,
    ]

    /// Schema version 13: one index on a purchase's owner, for both reads. Version 12 gave every credit a second
    /// entry on its owner (`purchases_untouched_lots`, `owner WHERE lot_untouched`) beside `purchases_owner`
    /// (`owner`): 11.7 k PostgreSQL instructions per result (docs/BENCHMARKS.md, "Lazy lots (schema 12)"). Indexed
    /// by (owner, lot_untouched), `purchases_owner` answers an owner's purchases by its first column, as before, and a
    /// wallet's untouched lots by both (`owner = $1 AND lot_untouched`: the flagged entries of that owner alone, in
    /// one range of the index), so a credit adds one owner entry. Clearing the flag changed an indexed column before
    /// (the partial index's predicate) and does now: no update that was HOT stops being HOT. Index only: no row
    /// changes.
    static let untouchedLotsInOwnerIndex: [String] = [
        "DROP INDEX purchases_owner",
        "CREATE INDEX purchases_owner ON purchases (owner, lot_untouched)",
        "DROP INDEX purchases_untouched_lots",
    ]

    static let migration: [String] = [
        "ALTER TABLE balances ADD COLUMN debt bigint NOT NULL DEFAULT 0, ADD COLUMN unrecovered bigint NOT NULL DEFAULT 0",
        """
        CREATE TABLE wallet_lots (
            user_id text NOT NULL,
            lot_key text NOT NULL,
            book text NOT NULL CHECK (book IN ('production','sandbox')),
            item text NOT NULL,
            kind text NOT NULL CHECK (kind IN ('purchase','grant')),
            amount bigint NOT NULL CHECK (amount > 0),
            spent bigint NOT NULL DEFAULT 0 CHECK (spent >= 0),
            taken bigint NOT NULL DEFAULT 0 CHECK (taken >= 0),
            covered bigint NOT NULL DEFAULT 0 CHECK (covered >= 0),
            added_at_ms bigint NOT NULL,
            PRIMARY KEY (user_id, lot_key),
            CHECK (spent + taken + covered <= amount)
        )
        """,
        // First in, first out over the lots with units left: what spends and take-backs read.
        """
        CREATE INDEX wallet_lots_remaining ON wallet_lots (user_id, book, item, added_at_ms, lot_key)
            WHERE \(hasRemaining)
        """,
        """
        CREATE TABLE wallet_clawbacks (
            user_id text NOT NULL,
            clawback_key text NOT NULL,
            book text NOT NULL CHECK (book IN ('production','sandbox')),
            item text NOT NULL,
            credit_key text,
            kind text NOT NULL CHECK (kind IN ('refund','upgrade','opening')),
            requested bigint NOT NULL,
            debt bigint NOT NULL DEFAULT 0 CHECK (debt >= 0),
            unrecovered bigint NOT NULL DEFAULT 0 CHECK (unrecovered >= 0),
            reversed boolean NOT NULL DEFAULT false,
            at_ms bigint NOT NULL,
            PRIMARY KEY (user_id, clawback_key)
        )
        """,
        "CREATE INDEX wallet_clawbacks_owed ON wallet_clawbacks (user_id, book, item) WHERE debt > 0",
        """
        CREATE INDEX wallet_clawbacks_open_refunds ON wallet_clawbacks (credit_key)
            WHERE kind = 'refund' AND NOT reversed
        """,
        """
        CREATE TABLE wallet_takes (
            user_id text NOT NULL,
            clawback_key text NOT NULL,
            lot_key text NOT NULL,
            amount bigint NOT NULL CHECK (amount > 0),
            PRIMARY KEY (user_id, clawback_key, lot_key)
        )
        """,
        // What each spend consumed (the attribution `amount_consumed` sums).
        """
        CREATE TABLE wallet_spends (
            user_id text NOT NULL,
            idempotency_key text NOT NULL,
            lot_key text NOT NULL,
            amount bigint NOT NULL CHECK (amount > 0),
            PRIMARY KEY (user_id, idempotency_key, lot_key)
        )
        """,
        // Each spend and grant request (per user and Idempotency-Key) with the answer given: replayed for the same
        // request, refused for another.
        """
        CREATE TABLE wallet_requests (
            user_id text NOT NULL,
            idempotency_key text NOT NULL,
            operation text NOT NULL CHECK (operation IN ('spend','grant')),
            book text NOT NULL,
            item text NOT NULL,
            amount bigint NOT NULL,
            note text,
            status integer NOT NULL,
            body text NOT NULL,
            at_ms bigint NOT NULL,
            PRIMARY KEY (user_id, idempotency_key)
        )
        """,
        """
        CREATE TABLE wallet_history (
            user_id text NOT NULL,
            seq bigint GENERATED ALWAYS AS IDENTITY,
            book text NOT NULL,
            item text NOT NULL,
            kind text NOT NULL CHECK (kind IN
                ('opening','credit','grant','spend','debit','upgrade','recredit','debt_repayment')),
            key text NOT NULL,
            credit_key text,
            amount bigint NOT NULL,
            balance_change bigint NOT NULL,
            shortfall bigint NOT NULL DEFAULT 0,
            note text,
            at_ms bigint NOT NULL,
            PRIMARY KEY (user_id, seq)
        )
        """,
        // Back-fill: a lot per credited item purchase (what refunds and upgrades took back then: taken).
        """
        INSERT INTO wallet_lots (user_id, lot_key, book, item, kind, amount, taken, added_at_ms)
        SELECT owner, credit_key, book, grant_name, 'purchase', grant_amount * quantity,
            least(greatest(grant_amount * quantity - (amount_credited - amount_debited), 0), grant_amount * quantity),
            coalesce(credited_at_ms, updated_at_ms)
        FROM purchases
        WHERE grant_kind = 'item' AND owner IS NOT NULL AND grant_amount > 0 AND quantity > 0
            AND status IN ('credited','debited','recredited','upgraded')
        """,
        // What was taken back, as takes of the purchase: the upgrade's share (never given back), and the rest as
        // an open refund (a reversal gives it back).
        """
        INSERT INTO wallet_clawbacks (user_id, clawback_key, book, item, credit_key, kind, requested, at_ms)
        SELECT l.user_id, 'upgrade:' || l.lot_key, l.book, l.item, l.lot_key, 'upgrade',
            least(p.upgrade_taken, l.taken), p.updated_at_ms
        FROM wallet_lots l JOIN purchases p ON p.credit_key = l.lot_key
        WHERE least(p.upgrade_taken, l.taken) > 0
        """,
        """
        INSERT INTO wallet_clawbacks (user_id, clawback_key, book, item, credit_key, kind, requested, at_ms)
        SELECT l.user_id, 'refund-before-schema-6:' || l.lot_key, l.book, l.item, l.lot_key, 'refund',
            l.taken - least(p.upgrade_taken, l.taken), p.updated_at_ms
        FROM wallet_lots l JOIN purchases p ON p.credit_key = l.lot_key
        WHERE l.taken - least(p.upgrade_taken, l.taken) > 0
        """,
        """
        INSERT INTO wallet_takes (user_id, clawback_key, lot_key, amount)
        SELECT user_id, clawback_key, credit_key, requested FROM wallet_clawbacks
        """,
        // A wallet without a balances row (none should be) is taken as having spent nothing.
        """
        INSERT INTO balances (user_id, book, item, amount)
        SELECT user_id, book, item, sum(amount - taken) FROM wallet_lots GROUP BY 1, 2, 3
        ON CONFLICT DO NOTHING
        """,
        // A balance below what its lots hold: the app spent the difference; counted spent first in, first out.
        """
        WITH totals AS (
            SELECT l.user_id, l.book, l.item, sum(l.amount - l.taken) AS remaining, max(b.amount) AS balance
            FROM wallet_lots l JOIN balances b USING (user_id, book, item) GROUP BY 1, 2, 3),
        fifo AS (
            SELECT l.user_id, l.lot_key, l.amount - l.taken AS available,
                sum(l.amount - l.taken) OVER (PARTITION BY l.user_id, l.book, l.item ORDER BY l.added_at_ms, l.lot_key)
                    - (l.amount - l.taken) AS before,
                t.remaining - greatest(t.balance, 0) AS to_spend
            FROM wallet_lots l JOIN totals t USING (user_id, book, item)
            WHERE t.remaining > greatest(t.balance, 0))
        UPDATE wallet_lots l SET spent = least(f.available, f.to_spend - f.before)
        FROM fifo f WHERE l.user_id = f.user_id AND l.lot_key = f.lot_key AND f.to_spend > f.before
        """,
        // A balance above what its lots hold (set by hand): an opening lot of the difference, oldest of all.
        """
        INSERT INTO wallet_lots (user_id, lot_key, book, item, kind, amount, added_at_ms)
        SELECT b.user_id, 'opening:' || b.book || ':' || b.item, b.book, b.item, 'purchase',
            b.amount - coalesce(s.remaining, 0), 0
        FROM balances b LEFT JOIN (
            SELECT user_id, book, item, sum(amount - taken) AS remaining FROM wallet_lots GROUP BY 1, 2, 3
        ) s USING (user_id, book, item)
        WHERE b.amount > coalesce(s.remaining, 0)
        """,
        // A negative balance (amounts were signed before): an opening debt.
        """
        INSERT INTO wallet_clawbacks (user_id, clawback_key, book, item, kind, requested, debt, at_ms)
        SELECT user_id, 'opening:' || book || ':' || item, book, item, 'opening', -amount, -amount, 0
        FROM balances WHERE amount < 0
        """,
        "UPDATE balances SET debt = -amount WHERE amount < 0",
        """
        INSERT INTO wallet_history (user_id, book, item, kind, key, amount, balance_change, at_ms)
        SELECT user_id, book, item, 'opening', 'opening', abs(amount), amount,
            (extract(epoch FROM clock_timestamp()) * 1000)::bigint
        FROM balances WHERE amount <> 0 ORDER BY user_id, book, item
        """,
    ]
}
