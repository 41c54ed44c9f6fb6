import LedgerRules
import Postgres

/// What the HTTP API reads. Each query is one consistent snapshot (`REPEATABLE READ`, read only).
public enum LedgerQueries {
    public struct UserView: Sendable, Equatable {
        public var userId: String
        /// The production book.
        public var balances: [(item: String, amount: Int64)]
        public var entitlements: [Entitlement]
        public var purchases: [(creditKey: String, productId: String?, state: String, creditedAtMs: Int64?)]
        /// The sandbox book (`LEDGER_SANDBOX_POLICY=separate`): App Review and TestFlight purchases.
        public var sandbox: BookView
        /// The production book's wallets, per item (same order as `balances`).
        public var wallet: [(item: String, summary: WalletSummary)] = []

        public static func == (lhs: UserView, rhs: UserView) -> Bool {
            lhs.userId == rhs.userId && lhs.balances.elementsEqual(rhs.balances, by: ==)
                && lhs.entitlements == rhs.entitlements
                && lhs.purchases.elementsEqual(rhs.purchases, by: ==) && lhs.sandbox == rhs.sandbox
                && lhs.wallet.elementsEqual(rhs.wallet, by: ==)
        }

        /// The production wallet of `item` (all zero when none).
        public func wallet(_ item: String) -> WalletSummary {
            wallet.first { $0.item == item }?.summary ?? WalletSummary()
        }

        /// The production balance of `item` (0 when none).
        public func balance(_ item: String) -> Int64 { balances.first { $0.item == item }?.amount ?? 0 }
    }

    public struct Entitlement: Sendable, Equatable {
        public var entitlement: String
        public var expiresDateMs: Int64?
        public var creditKey: String
    }

    /// One book's balances and entitlements.
    public struct BookView: Sendable, Equatable {
        public var balances: [(item: String, amount: Int64)] = []
        public var entitlements: [Entitlement] = []
        /// Where each item's balance stands (same order as `balances`).
        public var wallet: [(item: String, summary: WalletSummary)] = []

        public static func == (lhs: BookView, rhs: BookView) -> Bool {
            lhs.balances.elementsEqual(rhs.balances, by: ==) && lhs.entitlements == rhs.entitlements
                && lhs.wallet.elementsEqual(rhs.wallet, by: ==)
        }

        /// The wallet of `item` (all zero when none).
        public func wallet(_ item: String) -> WalletSummary {
            wallet.first { $0.item == item }?.summary ?? WalletSummary()
        }

        /// The balance of `item` (0 when none).
        public func balance(_ item: String) -> Int64 { balances.first { $0.item == item }?.amount ?? 0 }
    }

    /// One item's wallet: its balance (`purchased` + `granted` - `debt`) by where its units came from.
    public struct WalletSummary: Sendable, Equatable {
        /// Units of purchases (and of the opening balance of schema version 6) not spent or taken back.
        public var purchased: Int64 = 0
        /// Units of grants not spent.
        public var granted: Int64 = 0
        /// Units refunds took back beyond the balance (`LEDGER_CLAWBACK=debt`), not repaid yet.
        public var debt: Int64 = 0
        /// Units refunds could not take back (`LEDGER_CLAWBACK=floor`; reversed refunds excluded).
        public var unrecovered: Int64 = 0

        public init(purchased: Int64 = 0, granted: Int64 = 0, debt: Int64 = 0, unrecovered: Int64 = 0) {
            self.purchased = purchased
            self.granted = granted
            self.debt = debt
            self.unrecovered = unrecovered
        }
    }

    public struct PurchaseView: Sendable, Equatable {
        public var creditKey: String
        public var owner: String?
        public var state: String
        public var amountCredited: Int64
        public var amountDebited: Int64
        /// Units of its lot spent, or taken to cover refunds of what the user spent (0 without a lot: not an item).
        public var amountConsumed: Int64 = 0
        /// Units of its lot still in the owner's balance.
        public var amountRemaining: Int64 = 0
        public var refusedClaims: [RefusedClaim]
    }

    public struct RefusedClaim: Sendable, Equatable {
        public var userId: String
        public var submissionId: String
        public var atMs: Int64
    }

    public static func user(_ userId: String, on connection: PostgresConnection) throws(PostgresError) -> UserView {
        try connection.transaction(isolation: .repeatableRead) { session throws(PostgresError) -> UserView in
            var books: [String: BookView] = [:]
            for row in try session.execute(walletSummaries, [.text(userId)]).rows {
                let item = try row.string("item")
                let name = try row.string("book")
                var book = books[name, default: BookView()]
                book.balances.append((item, try row.int64("amount")))
                book.wallet.append(
                    (
                        item,
                        WalletSummary(
                            purchased: try row.int64("purchased"), granted: try row.int64("granted"),
                            debt: try row.int64("debt"), unrecovered: try row.int64("unrecovered"))
                    ))
                books[name] = book
            }
            for row in try session.execute(
                """
                SELECT book, entitlement, expires_date_ms, credit_key FROM entitlements WHERE user_id = $1 AND active
                ORDER BY book, entitlement, credit_key
                """, [.text(userId)]
            ).rows {
                books[try row.string("book"), default: BookView()].entitlements.append(
                    Entitlement(
                        entitlement: try row.string("entitlement"),
                        expiresDateMs: try row.optionalInt64("expires_date_ms"),
                        creditKey: try row.string("credit_key")))
            }
            let production = books[Book.production.rawValue] ?? BookView()
            var view = UserView(
                userId: userId, balances: production.balances, entitlements: production.entitlements, purchases: [],
                sandbox: books[Book.sandbox.rawValue] ?? BookView(), wallet: production.wallet)
            for row in try session.execute(
                """
                SELECT credit_key, product_id, status, credited_at_ms FROM purchases WHERE owner = $1
                ORDER BY credited_at_ms NULLS LAST, credit_key
                """, [.text(userId)]
            ).rows {
                view.purchases.append(
                    (
                        try row.string("credit_key"), try row.optionalString("product_id"), try row.string("status"),
                        try row.optionalInt64("credited_at_ms")
                    ))
            }
            return view
        }
    }

    /// Each item's balance with its wallet: units remaining by kind (lot rows and untouched purchase lots,
    /// `wallet_lot_states`), debt and unrecovered units.
    static let walletSummaries = """
        SELECT b.book, b.item, b.amount, b.debt, b.unrecovered,
            coalesce(sum(l.amount - l.spent - l.taken - l.covered) FILTER (WHERE l.kind = 'purchase'), 0) AS purchased,
            coalesce(sum(l.amount - l.spent - l.taken - l.covered) FILTER (WHERE l.kind = 'grant'), 0) AS granted
        FROM balances b LEFT JOIN wallet_lot_states l ON l.user_id = b.user_id AND l.book = b.book AND l.item = b.item
            AND l.spent + l.taken + l.covered < l.amount
        WHERE b.user_id = $1 GROUP BY b.book, b.item, b.amount, b.debt, b.unrecovered ORDER BY b.book, b.item
        """

    /// nil when the ledger has never seen `creditKey`.
    public static func purchase(_ creditKey: String, on connection: PostgresConnection) throws(PostgresError)
        -> PurchaseView?
    {
        try connection.transaction(isolation: .repeatableRead) { session throws(PostgresError) -> PurchaseView? in
            guard
                let row = try session.execute(
                    """
                    SELECT p.owner, p.status, p.amount_credited, p.amount_debited,
                        coalesce(l.spent + l.covered, 0) AS consumed,
                        coalesce(l.amount - l.spent - l.taken - l.covered, 0) AS remaining
                    FROM purchases p LEFT JOIN wallet_lot_states l ON l.user_id = p.owner AND l.lot_key = p.credit_key
                    WHERE p.credit_key = $1
                    """, [.text(creditKey)]
                ).rows.first
            else { return nil }
            var view = PurchaseView(
                creditKey: creditKey, owner: try row.optionalString("owner"), state: try row.string("status"),
                amountCredited: try row.int64("amount_credited"), amountDebited: try row.int64("amount_debited"),
                amountConsumed: try row.int64("consumed"), amountRemaining: try row.int64("remaining"),
                refusedClaims: [])
            for claim in try session.execute(
                "SELECT user_id, submission_id, at_ms FROM refused_claims WHERE credit_key = $1 ORDER BY at_ms, user_id, submission_id",
                [.text(creditKey)]
            ).rows {
                view.refusedClaims.append(
                    RefusedClaim(
                        userId: try claim.string("user_id"), submissionId: try claim.string("submission_id"),
                        atMs: try claim.int64("at_ms")))
            }
            return view
        }
    }

    /// Claims waiting for an owner, dead letters recorded: for the gauges.
    public static func backlog(on connection: PostgresConnection) throws(PostgresError) -> (pendingClaims: Int64, deadLetters: Int64) {
        let row = try connection.execute(
            """
            SELECT (SELECT count(*) FROM pending_claims) AS pending_claims,
                (SELECT count(*) FROM dead_letters) AS dead_letters
            """
        ).rows[0]
        return (try row.int64("pending_claims"), try row.int64("dead_letters"))
    }
}
