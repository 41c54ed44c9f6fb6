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

        public static func == (lhs: UserView, rhs: UserView) -> Bool {
            lhs.userId == rhs.userId && lhs.balances.elementsEqual(rhs.balances, by: ==)
                && lhs.entitlements == rhs.entitlements
                && lhs.purchases.elementsEqual(rhs.purchases, by: ==) && lhs.sandbox == rhs.sandbox
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

        public static func == (lhs: BookView, rhs: BookView) -> Bool {
            lhs.balances.elementsEqual(rhs.balances, by: ==) && lhs.entitlements == rhs.entitlements
        }

        /// The balance of `item` (0 when none).
        public func balance(_ item: String) -> Int64 { balances.first { $0.item == item }?.amount ?? 0 }
    }

    public struct PurchaseView: Sendable, Equatable {
        public var creditKey: String
        public var owner: String?
        public var state: String
        public var amountCredited: Int64
        public var amountDebited: Int64
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
            for row in try session.execute(
                "SELECT book, item, amount FROM balances WHERE user_id = $1 ORDER BY book, item", [.text(userId)]
            ).rows {
                books[try row.string("book"), default: BookView()].balances.append(
                    (try row.string("item"), try row.int64("amount")))
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
                sandbox: books[Book.sandbox.rawValue] ?? BookView())
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

    /// nil when the ledger has never seen `creditKey`.
    public static func purchase(_ creditKey: String, on connection: PostgresConnection) throws(PostgresError)
        -> PurchaseView?
    {
        try connection.transaction(isolation: .repeatableRead) { session throws(PostgresError) -> PurchaseView? in
            guard
                let row = try session.execute(
                    "SELECT owner, status, amount_credited, amount_debited FROM purchases WHERE credit_key = $1",
                    [.text(creditKey)]
                ).rows.first
            else { return nil }
            var view = PurchaseView(
                creditKey: creditKey, owner: try row.optionalString("owner"), state: try row.string("status"),
                amountCredited: try row.int64("amount_credited"), amountDebited: try row.int64("amount_debited"),
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
