/// Events in Apple's order, and upgrades.
extension CreditingRules {
    /// An event takes effect only if Apple signed it no earlier than the last event *of its own order* applied to
    /// this purchase; an older one is recorded (`staleEvent`) and moves nothing. Events signed at the same
    /// millisecond apply in arrival order. There are two orders per purchase:
    /// - money events (`debit`, `recredit`, `revoke`) among themselves (`lastEventSignedMs`): a `REFUND` that arrives
    ///   after its own `REFUND_REVERSED` must not take the credit back;
    /// - `subscription_status` among status events (`lastStatusSignedMs`): an older status never overwrites a newer
    ///   expiry.
    /// A status notification never makes a money event stale, nor the reverse: Apple retries a failed delivery for
    /// 72 hours, so a `REFUND` signed before a `DID_CHANGE_RENEWAL_STATUS` often arrives after it, and it must still
    /// take the refund back.
    static func signed(
        _ atMs: Int64, _ inner: LedgerInput, _ state: PurchaseState, _ policy: OwnershipPolicy,
        _ sandbox: SandboxPolicy
    ) -> LedgerDecision {
        let order = EventOrder.of(inner)
        if let last = order.lastSigned(state), atMs < last {
            return LedgerDecision(state: state, actions: [.staleEvent])
        }
        var decision = decide(inner, state, policy, sandbox)
        if decision.actions.contains(where: { if case .unappliable = $0 { true } else { false } }) {
            return decision
        }
        order.record(atMs, in: &decision.state)
        return decision
    }

    /// Which of a purchase's two signing orders an event belongs to.
    enum EventOrder {
        case money, status

        static func of(_ input: LedgerInput) -> EventOrder {
            if case .subscriptionStatus = input { return .status }
            return .money
        }

        func lastSigned(_ state: PurchaseState) -> Int64? {
            switch self {
            case .money: state.lastEventSignedMs
            case .status: state.lastStatusSignedMs
            }
        }

        func record(_ atMs: Int64, in state: inout PurchaseState) {
            switch self {
            case .money: state.lastEventSignedMs = atMs
            case .status: state.lastStatusSignedMs = atMs
            }
        }
    }

    /// A credited period replaced by an upgrade to a period bought at `newPurchaseDateMs`: the unused share of its
    /// items is taken back (`unusedShare`) and its entitlement ends. Applies once, only to a period in force whose
    /// time span contains the new purchase; anything else changes nothing. A period is upgraded once: one refunded
    /// after its upgrade and then reversed (`recredited`) is in force again, and the replacement is still there, but
    /// its unused share was taken already (`upgradedAtMs`).
    static func upgrade(_ newPurchaseDateMs: Int64, _ state: PurchaseState) -> LedgerDecision {
        guard state.isInForce, state.upgradedAtMs == nil, let owner = state.owner, let purchased = state.purchaseDateMs,
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
