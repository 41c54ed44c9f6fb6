import LedgerRules
import Postgres

/// Who owns what: the links results make, the owners events find, the claims that wait for one.
enum LinkKind: String, Sendable {
    case originalTransactionId = "original_transaction_id"
    case appAccountToken = "app_account_token"
}

struct LinkKey: Hashable, Sendable {
    let kind: LinkKind
    let value: String
}

extension BatchWork {
    /// The user `value` is linked to, from the batch's links (read at its start for every id and token it carries).
    func linkedOwner(_ kind: LinkKind, _ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return ownerLinks[LinkKey(kind: kind, value: value)] ?? nil
    }

    /// The owner of a transaction whose message names none (an event, or a result without `user_id`): the user its
    /// `app_account_token` is linked to; only a transaction without a token falls back to the user its
    /// `original_transaction_id` is linked to (one Apple ID may serve several app accounts; the token says which).
    /// nil: it waits for its owner (on the token when it has one).
    mutating func resolveOwner(_ transaction: LedgerTransaction) throws(PostgresError) -> String? {
        if let token = transaction.appAccountToken, !token.isEmpty {
            return try knownOwner(.appAccountToken, token)
        }
        return try knownOwner(.originalTransactionId, transaction.originalTransactionId)
    }

    private mutating func knownOwner(_ kind: LinkKind, _ value: String?) throws(PostgresError) -> String? {
        guard let value, !value.isEmpty else { return nil }
        let key = LinkKey(kind: kind, value: value)
        if let known = ownerLinks[key] { return known }
        // Not among the batch's own ids (a claim resolved from another message's link): read it.
        let owner = try read(
            "SELECT user_id FROM owner_links WHERE kind = $1 AND value = $2", [.text(kind.rawValue), .text(value)]
        ).rows.first?.optionalString("user_id")
        ownerLinks[key] = .some(owner)
        return owner
    }

    /// Ties `value` to `owner` (first claim under `keep`, latest owner under `transfer`) and applies the claims
    /// that were waiting for it. Writes nothing when the link is already there.
    mutating func link(_ kind: LinkKind, _ value: String?, to owner: String) throws(PostgresError) {
        guard let value, !value.isEmpty else { return }
        let key = LinkKey(kind: kind, value: value)
        let current = try knownOwner(kind, value)
        if current == owner || (current != nil && policy == .keep) { return }
        ownerLinks[key] = .some(owner)
        try write(
            """
            INSERT INTO owner_links (kind, value, user_id) VALUES ($1, $2, $3)
            ON CONFLICT (kind, value) DO UPDATE SET user_id = EXCLUDED.user_id
            """, [.text(kind.rawValue), .text(value), .text(owner)])
        guard current == nil, awaitedValues.contains(value) else { return }
        let waitedOn = kind == .originalTransactionId ? "original_transaction_id" : "app_account_token"
        let waiting = try read(
            """
            DELETE FROM pending_claims WHERE \(waitedOn) = $1
            RETURNING claim_id, credit_key, source_kind, source_id, product_id, grant_kind, grant_name, grant_amount,
                quantity, expires_date_ms, at_ms, original_transaction_id, app_account_token, environment, ownership,
                purchase_date_ms, upgrade_notified
            """, [.text(value)]
        ).rows
        guard let columns = waiting.first?.columns else { return }
        let column = try PendingClaimPositions(columns)
        // In the order they were made.
        let ordered = try waiting.map { row throws(PostgresError) in
            (atMs: try row.int64(column.atMs), claimId: try row.string(column.claimId), row: row)
        }.sorted { ($0.atMs, $0.claimId) < ($1.atMs, $1.claimId) }
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
