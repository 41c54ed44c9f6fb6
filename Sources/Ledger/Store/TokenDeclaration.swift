import LedgerRules
import Postgres
import ReceiptModel

/// How a declaration of an app account token ended (`PUT /v1/users/{user_id}/app-account-token`).
public struct TokenDeclarationOutcome: Sendable, Equatable {
    public var decision: OwnerRules.Declaration
    /// When the token was first declared for its user (nil: `conflict`, the other user's binding is not told).
    public var declaredAtMs: Int64?
    /// What applying the claims that waited for the token did (`resolvedClaims`, credits, refusals...).
    public var summary: BatchSummary
}

extension LedgerStore {
    /// Declares `token` (a UUID, compared lower-cased) for `userId`, in every environment, and applies the claims
    /// parked for it (renewals after Set App Account Token, events of a token no result linked yet) by the same rules
    /// and locks as a batch: the token's advisory lock (a batch parking a claim for it and this declaration
    /// serialize, whichever commits first), then the parked claims' purchases `FOR UPDATE`, in key order. Within the
    /// caller's transaction; the same declaration again applies what is parked by then (normally nothing).
    public func declare(token: String, for userId: String, in session: PostgresSession, nowMs: Int64)
        throws(PostgresError) -> TokenDeclarationOutcome
    {
        let token = AppAccountToken.canonical(token)
        try session.execute(
            "SELECT pg_advisory_xact_lock(\(LedgerSchema.linkLockNamespace), hashtext($1))", [.text(token)])
        let existing = try session.execute(
            "SELECT user_id, declared_at_ms FROM declared_account_tokens WHERE app_account_token = $1", [.text(token)]
        ).rows.first
        let decision = OwnerRules.declare(user: userId, declaredOwner: try existing?.optionalString("user_id"))
        var declaredAtMs = try existing?.optionalInt64("declared_at_ms")
        switch decision {
        case .conflict:
            return TokenDeclarationOutcome(decision: .conflict, declaredAtMs: nil, summary: BatchSummary())
        case .declared:
            try session.execute(
                "INSERT INTO declared_account_tokens (app_account_token, user_id, declared_at_ms) VALUES ($1, $2, $3)",
                [.text(token), .text(userId), .int(nowMs)])
            declaredAtMs = nowMs
        case .alreadyDeclared:
            break
        }
        var work = BatchWork(
            session: session, topics: topics, policy: policy, sandboxPolicy: sandboxPolicy, clawback: clawback,
            nowMs: nowMs)
        work.declaredOwners[token] = .some(userId)
        try work.resolveWaiting(.appAccountToken, token, owner: userId, environment: nil)
        try work.finish()
        return TokenDeclarationOutcome(decision: decision, declaredAtMs: declaredAtMs, summary: work.summary)
    }
}
