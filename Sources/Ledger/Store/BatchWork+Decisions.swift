import LedgerRules
import Postgres

/// Asking the rules about one purchase and writing what they decided.
extension BatchWork {
    /// Runs the rules for one purchase and writes what they decided.
    /// - Parameter upgradeNotified: the credit came with an `UPGRADE` notification (evidence for `UpgradeRule`).
    /// - Parameter eventId: the event applied (a refund's take-back and a reversal are recorded under it).
    /// - Returns: why the input cannot be applied (dead-letter it), or nil.
    mutating func decide(
        _ input: LedgerInput, transaction: LedgerTransaction, claimId: String? = nil, upgradeNotified: Bool = false,
        eventId: String? = nil
    ) throws(PostgresError) -> String? {
        try decide(
            input, creditKey: transaction.creditKey, originalTransactionId: transaction.originalTransactionId,
            appAccountToken: transaction.appAccountToken, claimId: claimId, isPeriod: transaction.isPeriod,
            upgradeNotified: upgradeNotified, eventId: eventId)
    }

    mutating func decide(
        _ input: LedgerInput, creditKey: String, originalTransactionId: String?, appAccountToken: String?,
        claimId: String?, isPeriod: Bool, upgradeNotified: Bool, eventId: String? = nil
    ) throws(PostgresError) -> String? {
        var purchase = try load(creditKey)
        let before = purchase.state
        let decision = CreditingRules.apply(input, to: before, policy: policy, sandbox: sandboxPolicy, nowMs: nowMs)
        for case .unappliable(let reason) in decision.actions { return "\(creditKey): \(reason)" }
        if decision.actions.contains(.waitForOwner), case .credit(let claim) = input {
            if let reason = CreditingRules.reasonItCannotWait(claim, sandbox: sandboxPolicy) {
                return "\(creditKey): \(reason)"
            }
            try park(
                claim, claimId: claimId ?? creditKey, creditKey: creditKey,
                originalTransactionId: originalTransactionId, appAccountToken: appAccountToken,
                upgradeNotified: upgradeNotified)
        }
        if decision.state != before {
            let next = decision.state
            if before.status == .pendingOwner, next.status != .pendingOwner {
                // Credited (or refused) some other way: what waited for this purchase has nothing left to do.
                try write("DELETE FROM pending_claims WHERE credit_key = $1", [.text(creditKey)])
            }
            purchase.state = next
            if purchase.originalTransactionId == nil { purchase.originalTransactionId = originalTransactionId }
            purchases[creditKey] = purchase
            dirtyPurchases.insert(creditKey)
        }
        for action in decision.actions {
            try perform(action, creditKey: creditKey, book: decision.state.book)
        }
        queueWalletMoves(
            WalletRules.movements(for: input, before: before, decision: decision), creditKey: creditKey,
            state: decision.state, eventId: eventId)
        if case .credit(let claim) = input, claim.environment == .sandbox, !before.isCreditedOnce,
            decision.state.isCreditedOnce
        {
            summary.sandboxCredits += 1
        }
        if let originalTransactionId,
            UpgradeRule.mayReplace(
                isPeriod: isPeriod, before: before, after: decision.state, upgradeNotified: upgradeNotified)
        {
            try applyUpgrades(
                subscription: originalTransactionId, upgradeNotified: upgradeNotified ? [creditKey] : [])
        }
        return nil
    }

    mutating func perform(_ action: LedgerAction, creditKey: String, book: Book) throws(PostgresError) {
        switch action {
        case .adjustBalance:
            break  // a wallet movement (`WalletRules.movements`), queued by `decide`
        case .grantEntitlement(let owner, let entitlement, let expiresDateMs):
            try write(
                """
                INSERT INTO entitlements (credit_key, user_id, entitlement, expires_date_ms, active, book)
                VALUES ($1, $2, $3, $4, true, $5)
                ON CONFLICT (credit_key) DO UPDATE SET user_id = EXCLUDED.user_id, entitlement = EXCLUDED.entitlement,
                    expires_date_ms = EXCLUDED.expires_date_ms, active = true, book = EXCLUDED.book
                """,
                [.text(creditKey), .text(owner), .text(entitlement), .optional(expiresDateMs), .text(book.rawValue)])
        case .endEntitlement:
            try write("UPDATE entitlements SET active = false WHERE credit_key = $1", [.text(creditKey)])
        case .setEntitlementExpiry(let expiresDateMs):
            try write(
                "UPDATE entitlements SET expires_date_ms = $2 WHERE credit_key = $1", [.text(creditKey), .int(expiresDateMs)])
        case .recordRefusedClaim(let userId, let submissionId, let atMs):
            try write(
                """
                INSERT INTO refused_claims (credit_key, user_id, submission_id, at_ms) VALUES ($1, $2, $3, $4)
                ON CONFLICT DO NOTHING
                """, [.text(creditKey), .text(userId), .text(submissionId ?? ""), .int(atMs)], counted: .refusedClaim)
        case .recordTransfer:
            summary.transfers += 1
        case .declined:
            summary.declinedClaims += 1
        case .staleEvent:
            summary.staleEvents += 1
        case .waitForOwner, .unappliable:
            break  // handled in decide
        }
    }
}
