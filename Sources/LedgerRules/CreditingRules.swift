/// The crediting rules, the specification of the ledger (docs/CREDITING.md explains them): one pure function from a
/// purchase's state and an input to its next state and the changes to make. Money moves only in `credit` from
/// `none`/`pendingOwner`, in `debit` from `credited`/`recredited` (or more of an earlier partial debit), and in
/// `recredit` from `debited`, so the same input twice, or a result and a `credit` event for one purchase, move money
/// once. Event duplicates (`event_id`) are filtered before the rules by the store.
public enum CreditingRules {
    /// `revocation_percentage` of a full refund: 100% in thousandths of a percent.
    public static let fullRevocation: Int64 = 100_000

    public static func apply(_ input: LedgerInput, to state: PurchaseState, policy: OwnershipPolicy) -> LedgerDecision {
        switch input {
        case .credit(let claim): credit(claim, state, policy)
        case .debit(let percentage): debit(percentage, state)
        case .recredit: recredit(state)
        case .revoke: revoke(state)
        case .subscriptionStatus(let expiresDateMs): subscriptionStatus(expiresDateMs, state)
        }
    }

    /// The share of `amount` that `revocationPercentage` (thousandths of a percent, clamped to 0...100%) takes,
    /// rounded half up to whole units.
    public static func share(of amount: Int64, revocationPercentage: Int64?) -> Int64 {
        let percentage = Int128(min(max(revocationPercentage ?? fullRevocation, 0), fullRevocation))
        let total = Int128(amount) * percentage
        return Int64((total + Int128(fullRevocation / 2)) / Int128(fullRevocation))
    }

    // MARK: credit

    private static func credit(_ claim: CreditClaim, _ state: PurchaseState, _ policy: OwnershipPolicy)
        -> LedgerDecision
    {
        switch state.status {
        case .none, .pendingOwner:
            guard let owner = claim.owner else {
                var waiting = state
                waiting.status = .pendingOwner
                waiting.productId = claim.productId
                return LedgerDecision(state: waiting, actions: [.waitForOwner])
            }
            return firstCredit(claim, owner: owner, state)
        case .credited, .recredited, .debited:
            return laterClaim(claim, state, policy)
        case .refused:
            return refusedClaim(claim, state)
        }
    }

    private static func firstCredit(_ claim: CreditClaim, owner: String, _ state: PurchaseState) -> LedgerDecision {
        let grant: Grant?
        switch claim.credit {
        case .unknown(let description):
            return LedgerDecision(state: state, actions: [.unappliable(reason: "unknown credit shape: \(description)")])
        case .nothing: grant = nil
        case .grant(let known): grant = known
        }
        guard claim.quantity >= 1 else {
            return LedgerDecision(state: state, actions: [.unappliable(reason: "quantity \(claim.quantity) is not positive")])
        }
        var next = state
        next.status = .credited
        next.owner = owner
        next.productId = claim.productId
        next.grant = grant
        next.quantity = claim.quantity
        next.expiresDateMs = claim.expiresDateMs
        next.creditedAtMs = claim.atMs
        var actions: [LedgerAction] = []
        switch grant {
        case .item(let item, let amount):
            let (total, overflow) = amount.multipliedReportingOverflow(by: claim.quantity)
            guard !overflow, amount > 0 else {
                return LedgerDecision(
                    state: state, actions: [.unappliable(reason: "amount \(amount) × quantity \(claim.quantity) is not a usable amount")])
            }
            next.amountCredited = total
            actions.append(.adjustBalance(owner: owner, item: item, delta: total))
        case .entitlement(let entitlement):
            actions.append(.grantEntitlement(owner: owner, entitlement: entitlement, expiresDateMs: claim.expiresDateMs))
        case nil:
            break
        }
        return LedgerDecision(state: next, actions: actions)
    }

    /// A purchase already credited (or taken back) is claimed again: the same owner is a duplicate; another owner is
    /// refused, except that under `transfer` an entitlement still in force moves to them.
    private static func laterClaim(_ claim: CreditClaim, _ state: PurchaseState, _ policy: OwnershipPolicy)
        -> LedgerDecision
    {
        guard case .result(let submissionId) = claim.source, let claimant = claim.owner, claimant != state.owner
        else {
            // The same owner again, or an event (its owner comes from the ledger itself): money moved already.
            return LedgerDecision(state: state, actions: [])
        }
        if policy == .transfer, state.status != .debited, case .entitlement(let entitlement) = state.grant,
            let previous = state.owner
        {
            var next = state
            next.owner = claimant
            return LedgerDecision(
                state: next,
                actions: [
                    .grantEntitlement(owner: claimant, entitlement: entitlement, expiresDateMs: state.expiresDateMs),
                    .recordTransfer(from: previous, to: claimant),
                ])
        }
        return LedgerDecision(
            state: state, actions: [.recordRefusedClaim(userId: claimant, submissionId: submissionId, atMs: claim.atMs)])
    }

    /// A claim of a purchase refunded before it was credited: never credited. The first claimant is remembered as
    /// its owner (so a reversal of the refund can credit them), and every claim is recorded as refused.
    private static func refusedClaim(_ claim: CreditClaim, _ state: PurchaseState) -> LedgerDecision {
        guard case .result(let submissionId) = claim.source, let claimant = claim.owner else {
            return LedgerDecision(state: state, actions: [])
        }
        var next = state
        // Remembered only when it could have been credited (a known shape, a usable amount).
        let wouldBe = firstCredit(claim, owner: claimant, .unknown)
        if next.owner == nil, wouldBe.state.status == .credited {
            next.owner = claimant
            next.productId = wouldBe.state.productId
            next.grant = wouldBe.state.grant
            next.quantity = wouldBe.state.quantity
            next.expiresDateMs = wouldBe.state.expiresDateMs
        }
        return LedgerDecision(
            state: next, actions: [.recordRefusedClaim(userId: claimant, submissionId: submissionId, atMs: claim.atMs)])
    }

    // MARK: debit, recredit, revoke, subscription status

    private static func debit(_ revocationPercentage: Int64?, _ state: PurchaseState) -> LedgerDecision {
        var next = state
        switch state.status {
        case .none, .pendingOwner:
            // Refunded before it was credited: kept, and the credit is refused when it comes.
            next.status = .refused
            return LedgerDecision(state: next, actions: [])
        case .refused:
            return LedgerDecision(state: state, actions: [])
        case .credited, .recredited, .debited:
            break
        }
        guard let owner = state.owner else { return LedgerDecision(state: state, actions: []) }
        let wanted = share(of: state.fullAmount, revocationPercentage: revocationPercentage)
        // A further debit while debited (a second partial refund) takes only what its share adds to the last one.
        let alreadyTaken = state.status == .debited ? state.lastDebit : 0
        let take = max(wanted - alreadyTaken, 0)
        var actions: [LedgerAction] = []
        if take > 0, case .item(let item, _) = state.grant {
            actions.append(.adjustBalance(owner: owner, item: item, delta: -take))
        }
        if state.status != .debited, case .entitlement = state.grant {
            actions.append(.endEntitlement)
        }
        next.status = .debited
        next.lastDebit = alreadyTaken + take
        next.amountDebited = state.amountDebited + take
        return LedgerDecision(state: next, actions: actions)
    }

    private static func recredit(_ state: PurchaseState) -> LedgerDecision {
        var next = state
        switch state.status {
        case .debited:
            guard let owner = state.owner else { return LedgerDecision(state: state, actions: []) }
            var actions: [LedgerAction] = []
            switch state.grant {
            case .item(let item, _) where state.lastDebit > 0:
                actions.append(.adjustBalance(owner: owner, item: item, delta: state.lastDebit))
            case .entitlement(let entitlement):
                actions.append(
                    .grantEntitlement(owner: owner, entitlement: entitlement, expiresDateMs: state.expiresDateMs))
            default:
                break
            }
            next.status = .recredited
            next.amountCredited = state.amountCredited + state.lastDebit
            next.lastDebit = 0
            return LedgerDecision(state: next, actions: actions)
        case .refused:
            // The refund that refused the credit was reversed: the purchase is good again. A claimant already
            // known is credited now; otherwise the next claim credits as if nothing had happened.
            guard let owner = state.owner else {
                next.status = .none
                return LedgerDecision(state: next, actions: [])
            }
            var actions: [LedgerAction] = []
            switch state.grant {
            case .item(let item, _):
                next.amountCredited = state.fullAmount
                actions.append(.adjustBalance(owner: owner, item: item, delta: state.fullAmount))
            case .entitlement(let entitlement):
                actions.append(
                    .grantEntitlement(owner: owner, entitlement: entitlement, expiresDateMs: state.expiresDateMs))
            case nil:
                break
            }
            next.status = .recredited
            return LedgerDecision(state: next, actions: actions)
        case .none, .pendingOwner, .credited, .recredited:
            // Nothing was taken back: nothing to give back.
            return LedgerDecision(state: state, actions: [])
        }
    }

    private static func revoke(_ state: PurchaseState) -> LedgerDecision {
        var next = state
        switch state.status {
        case .none, .pendingOwner:
            // Withdrawn before it was credited: like a refund that came first.
            next.status = .refused
            return LedgerDecision(state: next, actions: [])
        case .credited, .recredited:
            // Family sharing shares entitlements only; no money is taken back.
            guard case .entitlement = state.grant else { return LedgerDecision(state: state, actions: []) }
            next.status = .debited
            next.lastDebit = 0
            return LedgerDecision(state: next, actions: [.endEntitlement])
        case .debited, .refused:
            return LedgerDecision(state: state, actions: [])
        }
    }

    private static func subscriptionStatus(_ expiresDateMs: Int64?, _ state: PurchaseState) -> LedgerDecision {
        guard let expiresDateMs, state.status == .credited || state.status == .recredited,
            case .entitlement = state.grant, state.expiresDateMs != expiresDateMs
        else { return LedgerDecision(state: state, actions: []) }
        var next = state
        next.expiresDateMs = expiresDateMs
        return LedgerDecision(state: next, actions: [.setEntitlementExpiry(expiresDateMs: expiresDateMs)])
    }
}
