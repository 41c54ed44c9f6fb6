import LedgerRules
import Postgres

/// Asking the rules about one purchase and writing what they decided.
extension BatchWork {
    /// Runs the rules for one purchase and writes what they decided.
    /// - Returns: why the input cannot be applied (dead-letter it), or nil.
    mutating func decide(_ input: LedgerInput, transaction: LedgerTransaction, claimId: String? = nil)
        throws(PostgresError) -> String?
    {
        try decide(
            input, creditKey: transaction.creditKey, originalTransactionId: transaction.originalTransactionId,
            appAccountToken: transaction.appAccountToken, claimId: claimId)
    }

    mutating func decide(
        _ input: LedgerInput, creditKey: String, originalTransactionId: String?, appAccountToken: String?,
        claimId: String?
    ) throws(PostgresError) -> String? {
        var purchase = try load(creditKey)
        let decision = CreditingRules.apply(input, to: purchase.state, policy: policy)
        for case .unappliable(let reason) in decision.actions { return "\(creditKey): \(reason)" }
        if decision.actions.contains(.waitForOwner), case .credit(let claim) = input {
            // Parked only if it could be applied once its owner is known; otherwise dead-lettered now, while the
            // message is at hand.
            var probe = claim
            probe.owner = "owner"
            for case .unappliable(let reason) in CreditingRules.apply(.credit(probe), to: .unknown, policy: policy).actions {
                return "\(creditKey): \(reason)"
            }
            try park(claim, claimId: claimId ?? creditKey, creditKey: creditKey, originalTransactionId: originalTransactionId, appAccountToken: appAccountToken)
        }
        if decision.state != purchase.state {
            var next = decision.state
            if next.creditedAtMs == nil, next.status == .credited || next.status == .recredited {
                next.creditedAtMs = claimTime(input)
            }
            try save(creditKey, next, exists: purchase.exists, originalTransactionId: originalTransactionId)
            if purchase.state.status == .pendingOwner, next.status != .pendingOwner {
                // Credited (or refused) some other way: what waited for this purchase has nothing left to do.
                try write("DELETE FROM pending_claims WHERE credit_key = $1", [.text(creditKey)])
            }
            purchase.state = next
            purchase.exists = next.status != .none
            purchases[creditKey] = purchase
        }
        for action in decision.actions {
            try perform(action, creditKey: creditKey)
        }
        return nil
    }

    func claimTime(_ input: LedgerInput) -> Int64 {
        if case .credit(let claim) = input { return claim.atMs }
        return nowMs
    }

    mutating func perform(_ action: LedgerAction, creditKey: String) throws(PostgresError) {
        switch action {
        case .adjustBalance(let owner, let item, let delta):
            try write(
                """
                INSERT INTO balances (user_id, item, amount) VALUES ($1, $2, $3)
                ON CONFLICT (user_id, item) DO UPDATE SET amount = balances.amount + EXCLUDED.amount
                """, [.text(owner), .text(item), .int(delta)])
        case .grantEntitlement(let owner, let entitlement, let expiresDateMs):
            try write(
                """
                INSERT INTO entitlements (credit_key, user_id, entitlement, expires_date_ms, active)
                VALUES ($1, $2, $3, $4, true)
                ON CONFLICT (credit_key) DO UPDATE SET user_id = EXCLUDED.user_id, entitlement = EXCLUDED.entitlement,
                    expires_date_ms = EXCLUDED.expires_date_ms, active = true
                """, [.text(creditKey), .text(owner), .text(entitlement), .optional(expiresDateMs)])
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
        case .waitForOwner, .unappliable:
            break  // handled in decide
        }
    }
}
