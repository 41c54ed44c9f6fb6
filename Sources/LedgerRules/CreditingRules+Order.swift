/// Money events in Apple's order, and upgrades.
extension CreditingRules {
    /// A money event takes effect only if Apple signed it no earlier than the last money event applied to this
    /// purchase; an older one is recorded (`staleEvent`) and moves nothing. Events signed at the same millisecond
    /// apply in arrival order.
    static func signed(
        _ atMs: Int64, _ inner: LedgerInput, _ state: PurchaseState, _ policy: OwnershipPolicy,
        _ sandbox: SandboxPolicy
    ) -> LedgerDecision {
        if let last = state.lastEventSignedMs, atMs < last {
            return LedgerDecision(state: state, actions: [.staleEvent])
        }
        var decision = decide(inner, state, policy, sandbox)
        if decision.actions.contains(where: { if case .unappliable = $0 { true } else { false } }) {
            return decision
        }
        decision.state.lastEventSignedMs = atMs
        return decision
    }

    /// A credited period replaced by an upgrade to a period bought at `newPurchaseDateMs`: the unused share of its
    /// items is taken back (`unusedShare`) and its entitlement ends. Applies once, only to a period in force whose
    /// time span contains the new purchase; anything else changes nothing.
    static func upgrade(_ newPurchaseDateMs: Int64, _ state: PurchaseState) -> LedgerDecision {
        guard state.isInForce, let owner = state.owner, let purchased = state.purchaseDateMs,
            let expires = state.expiresDateMs, purchased < newPurchaseDateMs, newPurchaseDateMs < expires
        else { return LedgerDecision(state: state, actions: []) }
        let take = unusedShare(
            of: state.fullAmount, purchaseDateMs: purchased, expiresDateMs: expires, upgradedAtMs: newPurchaseDateMs)
        var next = state
        next.status = .upgraded
        next.lastDebit = take
        next.upgradeTaken = take
        next.upgradedAtMs = newPurchaseDateMs
        next.amountDebited = state.amountDebited + take
        var actions: [LedgerAction] = []
        switch state.grant {
        case .item(let item, _) where take > 0: actions.append(.adjustBalance(owner: owner, item: item, delta: -take))
        case .entitlement: actions.append(.endEntitlement)
        default: break
        }
        return LedgerDecision(state: next, actions: actions)
    }

    /// `amount × (expires − upgraded) / (expires − purchased)`, rounded half up to whole units: the part of a
    /// period not used before the upgrade (Apple refunds that part of its price).
    public static func unusedShare(of amount: Int64, purchaseDateMs: Int64, expiresDateMs: Int64, upgradedAtMs: Int64)
        -> Int64
    {
        let length = Int128(expiresDateMs) - Int128(purchaseDateMs)
        guard length > 0, amount > 0 else { return 0 }
        let unused = min(max(Int128(expiresDateMs) - Int128(upgradedAtMs), 0), length)
        return Int64((Int128(amount) * unused * 2 + length) / (2 * length))
    }
}

extension CreditingRules {
    /// Why a claim waiting for its owner could never be applied once the owner is known (an unknown shape, an
    /// impossible amount): such a claim is dead-lettered while its message is at hand instead of parked. nil: it
    /// may wait.
    public static func reasonItCannotWait(_ claim: CreditClaim, sandbox: SandboxPolicy) -> String? {
        var probe = claim
        probe.owner = probe.owner ?? "owner"
        for case .unappliable(let reason) in decide(.credit(probe), .unknown, .keep, sandbox).actions {
            return reason
        }
        return nil
    }
}
