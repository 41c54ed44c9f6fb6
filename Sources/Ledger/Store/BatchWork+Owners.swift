import LedgerRules
import Postgres
import ReceiptModel

/// Who owns what: the links results make (per environment), the tokens the backend declared, the owners claims
/// find (`OwnerRules`), the claims that wait for one.
enum LinkKind: String, Sendable {
    case originalTransactionId = "original_transaction_id"
    case appAccountToken = "app_account_token"

    /// The `pending_claims` column a claim waiting on this kind of value keeps it in.
    var pendingColumn: String { rawValue }
}

struct LinkKey: Hashable, Sendable {
    let kind: LinkKind
    let environment: PurchaseEnvironment
    let value: String
}

extension BatchWork {
    /// What the ledger knows of the owner of `transaction`'s claim, asked of `OwnerRules`: the token's declared
    /// owner, the links of its token and original id in each environment.
    mutating func owner(of transaction: LedgerTransaction, claimant: String?) throws(PostgresError) -> OwnerRules.Owner {
        let token = transaction.appAccountToken.flatMap { $0.isEmpty ? nil : $0 }
        var facts = OwnerRules.Facts(
            claimant: claimant, environment: transaction.environment, hasToken: token != nil)
        if let token {
            facts.declaredOwner = try declaredOwner(token)
            // Only this environment's link can decide; the other's is never read for it.
            facts.tokenLinks[transaction.environment] = try knownOwner(.appAccountToken, transaction.environment, token)
        } else if claimant == nil {
            facts.originalLinks[transaction.environment] = try knownOwner(
                .originalTransactionId, transaction.environment, transaction.originalTransactionId)
        }
        return OwnerRules.owner(facts)
    }

    /// The user the backend declared `token` for (`declared_account_tokens`; tokens compare in their canonical,
    /// lower-cased form, as UUIDs).
    mutating func declaredOwner(_ token: String) throws(PostgresError) -> String? {
        let normalized = AppAccountToken.canonical(token)
        if let known = declaredOwners[normalized] { return known }
        let owner = try read(
            "SELECT user_id FROM declared_account_tokens WHERE app_account_token = $1", [.text(normalized)]
        ).rows.first?.optionalString("user_id")
        declaredOwners[normalized] = .some(owner)
        return owner
    }

    private mutating func knownOwner(_ kind: LinkKind, _ environment: PurchaseEnvironment, _ value: String?)
        throws(PostgresError) -> String?
    {
        guard let value, !value.isEmpty else { return nil }
        let key = LinkKey(kind: kind, environment: environment, value: value)
        if let known = ownerLinks[key] { return known }
        // Not among the batch's own ids (a claim resolved from another message's link): read it.
        let owner = try read(
            "SELECT user_id FROM owner_links WHERE kind = $1 AND environment = $2 AND value = $3",
            [.text(kind.rawValue), .text(environment.rawValue), .text(value)]
        ).rows.first?.optionalString("user_id")
        ownerLinks[key] = .some(owner)
        return owner
    }

    /// Ties `value` to `owner` in `environment` when `OwnerRules.links` says so (first claim under `keep`, latest
    /// owner under `transfer`, never a declared token) and applies the claims of that environment that were waiting
    /// for it. Writes nothing when the link is already there.
    mutating func link(_ kind: LinkKind, _ value: String?, to owner: String, in environment: PurchaseEnvironment)
        throws(PostgresError)
    {
        guard let value, !value.isEmpty else { return }
        let declared = kind == .appAccountToken ? try declaredOwner(value) != nil : false
        let current = try knownOwner(kind, environment, value)
        guard OwnerRules.links(owner, current: current, declared: declared, policy: policy) else { return }
        ownerLinks[LinkKey(kind: kind, environment: environment, value: value)] = .some(owner)
        try write(
            """
            INSERT INTO owner_links (kind, environment, value, user_id) VALUES ($1, $2, $3, $4)
            ON CONFLICT (value, kind, environment) DO UPDATE SET user_id = EXCLUDED.user_id
            """, [.text(kind.rawValue), .text(environment.rawValue), .text(value), .text(owner)])
        guard current == nil, awaitedValues.contains(value) else { return }
        try resolveWaiting(kind, value, owner: owner, environment: environment)
    }

    /// Applies, in the order they were made, the claims waiting on `value` (in `environment`, or in every
    /// environment for a declared token: nil), now owned by `owner`. Their purchases are read and locked together,
    /// in key order, before any is decided.
    /// - Returns: how many claims were applied.
    @discardableResult
    mutating func resolveWaiting(
        _ kind: LinkKind, _ value: String, owner: String, environment: PurchaseEnvironment?
    ) throws(PostgresError) -> Int {
        var parameters: [PostgresValue] = [.text(value)]
        if let environment { parameters.append(.text(environment.rawValue)) }
        let waiting = try read(
            """
            DELETE FROM pending_claims WHERE \(kind.pendingColumn) = $1\(environment == nil ? "" : " AND environment = $2")
            RETURNING claim_id, credit_key, source_kind, source_id, product_id, grant_kind, grant_name, grant_amount,
                quantity, expires_date_ms, at_ms, original_transaction_id, app_account_token, environment, ownership,
                purchase_date_ms, upgrade_notified
            """, parameters
        ).rows
        guard let columns = waiting.first?.columns else { return 0 }
        let column = try PendingClaimPositions(columns)
        // In the order they were made.
        let ordered = try waiting.map { row throws(PostgresError) in
            (atMs: try row.int64(column.atMs), claimId: try row.string(column.claimId), row: row)
        }.sorted { ($0.atMs, $0.claimId) < ($1.atMs, $1.claimId) }
        var keys: Set<String> = []
        for (_, _, row) in ordered { keys.insert(try row.string(column.creditKey)) }
        try loadPurchases(keys: keys, subscriptions: [], periodsEndingAfter: .max)
        for (atMs, claimId, row) in ordered {
            let sourceId = try row.string(column.sourceId)
            let source: CreditClaim.Source =
                try row.string(column.sourceKind) == "event"
                ? .event(eventId: sourceId) : .result(submissionId: sourceId)
            let claim = CreditClaim(
                source: source, owner: owner, productId: try row.string(column.productId),
                credit: try Self.readShape(row, at: column.grant), quantity: try row.int64(column.quantity),
                expiresDateMs: try row.optionalInt64(column.expiresDateMs), atMs: atMs,
                environment: PurchaseEnvironment(rawValue: try row.string(column.environment)) ?? .production,
                ownership: try row.string(column.ownership) == "family_shared" ? .familyShared : .purchased,
                purchaseDateMs: try row.optionalInt64(column.purchaseDateMs))
            let creditKey = try row.string(column.creditKey)
            summary.resolvedClaims += 1
            _ = try decide(
                .credit(claim), creditKey: creditKey,
                originalTransactionId: row.optionalString(column.originalTransactionId),
                appAccountToken: row.optionalString(column.appAccountToken), claimId: claimId,
                isPeriod: PurchaseKey.isPeriod(creditKey), upgradeNotified: try row.bool(column.upgradeNotified))
        }
        return ordered.count
    }

    /// Where the columns of a `pending_claims` row stand in a result: found by name once, every row read at them.
    private struct PendingClaimPositions {
        let claimId: Int, creditKey: Int, sourceKind: Int, sourceId: Int, productId: Int, grant: GrantPositions
        let quantity: Int, expiresDateMs: Int, atMs: Int, originalTransactionId: Int, appAccountToken: Int
        let environment: Int, ownership: Int, purchaseDateMs: Int, upgradeNotified: Int

        init(_ columns: PostgresColumns) throws(PostgresError) {
            claimId = try columns.position(of: "claim_id")
            creditKey = try columns.position(of: "credit_key")
            sourceKind = try columns.position(of: "source_kind")
            sourceId = try columns.position(of: "source_id")
            productId = try columns.position(of: "product_id")
            grant = try GrantPositions(columns)
            quantity = try columns.position(of: "quantity")
            expiresDateMs = try columns.position(of: "expires_date_ms")
            atMs = try columns.position(of: "at_ms")
            originalTransactionId = try columns.position(of: "original_transaction_id")
            appAccountToken = try columns.position(of: "app_account_token")
            environment = try columns.position(of: "environment")
            ownership = try columns.position(of: "ownership")
            purchaseDateMs = try columns.position(of: "purchase_date_ms")
            upgradeNotified = try columns.position(of: "upgrade_notified")
        }
    }

    /// Parks a claim until its owner is known: on its `app_account_token` when it has one (never falling back to
    /// the `original_transaction_id`), else on its `original_transaction_id`.
    mutating func park(
        _ claim: CreditClaim, claimId: String, creditKey: String, originalTransactionId: String?,
        appAccountToken: String?, upgradeNotified: Bool
    ) throws(PostgresError) {
        let (sourceKind, sourceId): (String, String) =
            switch claim.source {
            case .event(let eventId): ("event", eventId)
            case .result(let submissionId): ("result", submissionId)
            }
        let token = appAccountToken.flatMap { $0.isEmpty ? nil : $0 }
        let original = token == nil ? originalTransactionId : nil
        let grant = Self.grantColumns(claim.credit)
        if let original { awaitedValues.insert(original) }
        if let token { awaitedValues.insert(token) }
        try write(
            """
            INSERT INTO pending_claims (claim_id, credit_key, original_transaction_id, app_account_token, source_kind,
                source_id, product_id, grant_kind, grant_name, grant_amount, quantity, expires_date_ms, at_ms,
                environment, ownership, purchase_date_ms, upgrade_notified)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) ON CONFLICT DO NOTHING
            """,
            [
                .text(claimId), .text(creditKey), .optional(original), .optional(token),
                .text(sourceKind), .text(sourceId), .text(claim.productId), grant.kind, grant.name, grant.amount,
                .int(claim.quantity), .optional(claim.expiresDateMs), .int(claim.atMs),
                .text(claim.environment.rawValue), .text(claim.ownership == .familyShared ? "family_shared" : "purchased"),
                .optional(claim.purchaseDateMs), .bool(upgradeNotified),
            ], counted: .parkedClaim)
    }
}
