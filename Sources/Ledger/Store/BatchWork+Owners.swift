import LedgerRules
import Postgres

/// Who owns what: the links results make, the owners events find, the claims that wait for one.
extension BatchWork {
    enum LinkKind: String {
        case originalTransactionId = "original_transaction_id"
        case appAccountToken = "app_account_token"
    }

    /// The owner a result tied to the transaction's `original_transaction_id`, else to its `app_account_token`.
    mutating func resolveOwner(_ transaction: LedgerTransaction) throws(PostgresError) -> String? {
        let original = transaction.originalTransactionId.flatMap { $0.isEmpty ? nil : $0 }
        let token = transaction.appAccountToken.flatMap { $0.isEmpty ? nil : $0 }
        guard original != nil || token != nil else { return nil }
        let rows = try read(
            """
            SELECT user_id FROM owner_links
            WHERE (kind = 'original_transaction_id' AND value = $1) OR (kind = 'app_account_token' AND value = $2)
            ORDER BY kind DESC LIMIT 1
            """, [.optional(original), .optional(token)]
        ).rows
        return rows.first?.optionalString(0)
    }

    /// Ties `value` to `owner` (first claim under `keep`, latest claimant under `transfer`) and applies the claims
    /// that were waiting for it.
    mutating func link(_ kind: LinkKind, _ value: String?, to owner: String) throws(PostgresError) {
        guard let value, !value.isEmpty else { return }
        let conflict =
            policy == .keep
            ? "DO NOTHING"
            : "DO UPDATE SET user_id = EXCLUDED.user_id WHERE owner_links.user_id <> EXCLUDED.user_id"
        let statement =
            "INSERT INTO owner_links (kind, value, user_id) VALUES ($1, $2, $3) ON CONFLICT (kind, value) " + conflict
        let parameters: [PostgresValue] = [.text(kind.rawValue), .text(value), .text(owner)]
        guard awaitedValues.contains(value) else {
            // No claim waits for this value: whether the link is new does not matter now.
            try write(statement, parameters)
            return
        }
        let changed = try read(statement, parameters)
        guard changed.affectedRows == 1 else { return }
        let column = kind == .originalTransactionId ? "original_transaction_id" : "app_account_token"
        let waiting = try read(
            """
            DELETE FROM pending_claims WHERE \(column) = $1
            RETURNING claim_id, credit_key, source_kind, source_id, product_id, grant_kind, grant_name, grant_amount,
                quantity, expires_date_ms, at_ms, original_transaction_id, app_account_token
            """, [.text(value)]
        ).rows
        let ordered = waiting.sorted { (a: PostgresRow, b: PostgresRow) in
            ((try? a.int64(10)) ?? 0, a.values[0] ?? "") < ((try? b.int64(10)) ?? 0, b.values[0] ?? "")
        }
        for row in ordered {
            let sourceId = try row.string(3)
            let source: CreditClaim.Source =
                try row.string(2) == "event" ? .event(eventId: sourceId) : .result(submissionId: sourceId)
            let claim = CreditClaim(
                source: source, owner: owner, productId: try row.string(4),
                credit: try Self.readShape(row, kind: 5, name: 6, amount: 7), quantity: try row.int64(8),
                expiresDateMs: try row.optionalInt64(9), atMs: try row.int64(10))
            summary.resolvedClaims += 1
            _ = try decide(
                .credit(claim), creditKey: try row.string(1), originalTransactionId: row.optionalString(11),
                appAccountToken: row.optionalString(12), claimId: try row.string(0))
        }
    }

    mutating func park(
        _ claim: CreditClaim, claimId: String, creditKey: String, originalTransactionId: String?,
        appAccountToken: String?
    ) throws(PostgresError) {
        let (sourceKind, sourceId): (String, String) =
            switch claim.source {
            case .event(let eventId): ("event", eventId)
            case .result(let submissionId): ("result", submissionId)
            }
        let grant = Self.grantColumns(claim.credit)
        if let originalTransactionId { awaitedValues.insert(originalTransactionId) }
        if let appAccountToken { awaitedValues.insert(appAccountToken) }
        try write(
            """
            INSERT INTO pending_claims (claim_id, credit_key, original_transaction_id, app_account_token, source_kind,
                source_id, product_id, grant_kind, grant_name, grant_amount, quantity, expires_date_ms, at_ms)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT DO NOTHING
            """,
            [
                .text(claimId), .text(creditKey), .optional(originalTransactionId), .optional(appAccountToken),
                .text(sourceKind), .text(sourceId), .text(claim.productId), grant.kind, grant.name, grant.amount,
                .int(claim.quantity), .optional(claim.expiresDateMs), .int(claim.atMs),
            ], counted: .parkedClaim)
    }
}
