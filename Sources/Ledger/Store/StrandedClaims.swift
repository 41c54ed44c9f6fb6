import LedgerRules
import Postgres

extension LedgerStore {
    /// Applies the claims parked on an `app_account_token` that has an owner by now: declared (every environment)
    /// or linked in the claim's environment. A claim waits for its token's owner and is applied when a link or a
    /// declaration is made; one parked while the same token, cased otherwise, was linked was never woken (schema
    /// version 9 puts tokens in one case, so they meet now). Run at start, after the migrations; normally it finds
    /// nothing. Each token in its own transaction, under its advisory lock, as a batch or a declaration would
    /// (another instance doing the same finds the claims gone).
    /// - Returns: what applying them did (`resolvedClaims`, credits, refusals...), summed over the tokens.
    public func resolveStrandedClaims(on connection: PostgresConnection, nowMs: Int64) throws(PostgresError)
        -> BatchSummary
    {
        let stranded = try connection.execute(
            """
            SELECT DISTINCT c.app_account_token AS token, c.environment, d.user_id AS declared, l.user_id AS linked
            FROM pending_claims c
            LEFT JOIN declared_account_tokens d ON d.app_account_token = c.app_account_token
            LEFT JOIN owner_links l
                ON l.kind = 'app_account_token' AND l.value = c.app_account_token AND l.environment = c.environment
            WHERE c.app_account_token IS NOT NULL AND (d.user_id IS NOT NULL OR l.user_id IS NOT NULL)
            ORDER BY 1, 2
            """
        ).rows
        var total = BatchSummary()
        for row in stranded {
            let token = try row.string("token")
            // A declared token binds in every environment (as `declare` applies it); a link in its own.
            let declared = try row.optionalString("declared")
            let linked = try row.optionalString("linked")
            guard let environment = PurchaseEnvironment(rawValue: try row.string("environment")),
                let owner = declared ?? linked
            else { continue }
            let summary = try connection.transaction { session throws(PostgresError) -> BatchSummary in
                try session.execute(
                    "SELECT pg_advisory_xact_lock(\(LedgerSchema.linkLockNamespace), hashtext($1))", [.text(token)])
                var work = BatchWork(
                    session: session, topics: topics, policy: policy, sandboxPolicy: sandboxPolicy, clawback: clawback,
                    nowMs: nowMs)
                if let declared { work.declaredOwners[token] = .some(declared) }
                try work.resolveWaiting(
                    .appAccountToken, token, owner: owner, environment: declared == nil ? environment : nil)
                try work.finish()
                return work.summary
            }
            total.resolvedClaims += summary.resolvedClaims
            total.refusedClaims += summary.refusedClaims
            total.declinedClaims += summary.declinedClaims
            total.sandboxCredits += summary.sandboxCredits
            total.upgrades += summary.upgrades
            total.unrecoveredUnits += summary.unrecoveredUnits
            total.debtUnits += summary.debtUnits
        }
        return total
    }
}
