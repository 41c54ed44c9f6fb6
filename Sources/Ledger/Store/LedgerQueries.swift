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
                books[try row.string(0), default: BookView()].balances.append((try row.string(1), try row.int64(2)))
            }
            for row in try session.execute(
                """
                SELECT book, entitlement, expires_date_ms, credit_key FROM entitlements WHERE user_id = $1 AND active
                ORDER BY book, entitlement, credit_key
                """, [.text(userId)]
            ).rows {
                books[try row.string(0), default: BookView()].entitlements.append(
                    Entitlement(entitlement: try row.string(1), expiresDateMs: try row.optionalInt64(2), creditKey: try row.string(3)))
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
                view.purchases.append((try row.string(0), row.optionalString(1), try row.string(2), try row.optionalInt64(3)))
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
                creditKey: creditKey, owner: row.optionalString(0), state: try row.string(1),
                amountCredited: try row.int64(2), amountDebited: try row.int64(3), refusedClaims: [])
            for claim in try session.execute(
                "SELECT user_id, submission_id, at_ms FROM refused_claims WHERE credit_key = $1 ORDER BY at_ms, user_id, submission_id",
                [.text(creditKey)]
            ).rows {
                view.refusedClaims.append(
                    RefusedClaim(userId: try claim.string(0), submissionId: try claim.string(1), atMs: try claim.int64(2)))
            }
            return view
        }
    }

    /// Claims waiting for an owner, dead letters recorded: for the gauges.
    public static func backlog(on connection: PostgresConnection) throws(PostgresError) -> (pendingClaims: Int64, deadLetters: Int64) {
        let row = try connection.execute(
            "SELECT (SELECT count(*) FROM pending_claims), (SELECT count(*) FROM dead_letters)"
        ).rows[0]
        return (try row.int64(0), try row.int64(1))
    }
}
