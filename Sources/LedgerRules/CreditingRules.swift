/// The crediting rules, the specification of the ledger (docs/CREDITING.md explains them): one pure function from a
/// purchase's state and an input to its next state and the changes to make. Money moves only in `credit` from
/// `unseen`/`pendingOwner` (or a `refused` one whose refund was prorated), in `debit` from `credited`/`recredited` (or
/// more of an earlier partial debit or upgrade), in `recredit` from `debited`, and in `upgrade` from
/// `credited`/`recredited`, so the same input twice, or a result and a `credit` event for one purchase, move money
/// once. Event duplicates (`event_id`) are filtered before the rules by the store.
public enum CreditingRules {
    /// `revocation_percentage` of a full refund: 100% in thousandths of a percent.
    public static let fullRevocation: Int64 = 100_000

    /// - Parameters:
    ///   - policy: `LEDGER_OWNERSHIP_POLICY`.
    ///   - sandbox: `LEDGER_SANDBOX_POLICY`: which book a Sandbox purchase's credit goes to, if any.
    /// - Parameter nowMs: when the ledger applies `input`: the credit time of a purchase that becomes credited
    ///   without a claim of its own (`creditedAtMs`, see `stampingCreditTime`).
    public static func apply(
        _ input: LedgerInput, to state: PurchaseState, policy: OwnershipPolicy, sandbox: SandboxPolicy = .separate,
        nowMs: Int64
    ) -> LedgerDecision {
        var decision = decide(input, state, policy, sandbox)
        decision.state = stampingCreditTime(decision.state, input: input, nowMs: nowMs)
        return decision
    }

    /// `state` with its `creditedAtMs` set when it is credited (or credited again) and has none yet: the claim's
    /// time for a credit (its `atMs`, also under an Apple signing time), else `nowMs` (a recredit of a purchase
    /// credited before the ledger kept credit times). A time once set is kept: reconciliation picks the purchases
    /// credited recently by it, and a later event must not make an old purchase look new.
    public static func stampingCreditTime(_ state: PurchaseState, input: LedgerInput, nowMs: Int64) -> PurchaseState {
        guard state.creditedAtMs == nil, state.status == .credited || state.status == .recredited else { return state }
        var stamped = state
        stamped.creditedAtMs = claimTime(input) ?? nowMs
        return stamped
    }

    private static func claimTime(_ input: LedgerInput) -> Int64? {
        switch input {
        case .credit(let claim): claim.atMs
        case .signed(_, let inner): claimTime(inner)
        default: nil
        }
    }

    /// The rules without the credit time (`apply` stamps it once, after an input's every step).
    static func decide(
        _ input: LedgerInput, _ state: PurchaseState, _ policy: OwnershipPolicy, _ sandbox: SandboxPolicy
    ) -> LedgerDecision {
        switch input {
        case .credit(let claim): credit(claim, state, policy, sandbox)
        case .debit(let percentage): debit(percentage, state)
        case .recredit: recredit(state)
        case .revoke: revoke(state)
        case .subscriptionStatus(let expiresDateMs): subscriptionStatus(expiresDateMs, state)
        case .signed(let atMs, let inner): signed(atMs, inner, state, policy, sandbox)
        case .upgrade(let newPurchaseDateMs): upgrade(newPurchaseDateMs, state)
        }
    }

    /// The book a claim's grant goes to under `sandbox`, or nil when it grants nothing (`ignore`).
    public static func book(for environment: PurchaseEnvironment, sandbox: SandboxPolicy) -> Book? {
        switch (environment, sandbox) {
        case (.production, _): .production
        case (.sandbox, .separate): .sandbox
        case (.sandbox, .credit): .production
        case (.sandbox, .ignore): nil
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

    static func credit(
        _ claim: CreditClaim, _ state: PurchaseState, _ policy: OwnershipPolicy, _ sandbox: SandboxPolicy
    ) -> LedgerDecision {
        if claim.ownership == .familyShared, case .grant(.item) = claim.credit {
            // Someone else paid: Family Sharing shares entitlements, never items or currency.
            return LedgerDecision(state: state, actions: [.declined(reason: .familySharedItems)])
        }
        switch state.status {
        case .unseen, .pendingOwner:
            guard let owner = claim.owner else {
                var waiting = state
                waiting.status = .pendingOwner
                waiting.productId = claim.productId
                waiting.productKind = claim.productKind ?? state.productKind
                return LedgerDecision(state: waiting, actions: [.waitForOwner])
            }
            return firstCredit(claim, owner: owner, state, sandbox)
        case .credited, .recredited, .debited, .upgraded:
            return laterClaim(claim, state, policy)
        case .refused:
            if let percentage = state.refusedPercentage, percentage < fullRevocation, let owner = claim.owner,
                case .grant(.item) = claim.credit
            {
                // A prorated refund came first: the user kept the rest. Credit, then take the refund's share.
                let credited = firstCredit(claim, owner: owner, state, sandbox)
                guard credited.state.status == .credited else { return credited }
                var fresh = credited.state
                fresh.refusedPercentage = nil
                let debited = debit(percentage, fresh)
                return LedgerDecision(state: debited.state, actions: credited.actions + debited.actions)
            }
            return refusedClaim(claim, state, sandbox)
        }
    }

    private static func firstCredit(
        _ claim: CreditClaim, owner: String, _ state: PurchaseState, _ sandbox: SandboxPolicy
    ) -> LedgerDecision {
        var grant: Grant?
        switch claim.credit {
        case .unknown(let description):
            return LedgerDecision(state: state, actions: [.unappliable(reason: "unknown credit shape: \(description)")])
        case .nothing: grant = nil
        case .grant(let known): grant = known
        }
        let book = book(for: claim.environment, sandbox: sandbox)
        if book == nil { grant = nil }
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
        next.book = book ?? .production
        next.purchaseDateMs = claim.purchaseDateMs
        next.productKind = claim.productKind ?? state.productKind
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
        if policy == .transfer, state.isInForce, case .entitlement(let entitlement) = state.grant,
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
    private static func refusedClaim(_ claim: CreditClaim, _ state: PurchaseState, _ sandbox: SandboxPolicy)
        -> LedgerDecision
    {
        guard case .result(let submissionId) = claim.source, let claimant = claim.owner else {
            return LedgerDecision(state: state, actions: [])
        }
        var next = state
        // Remembered only when it could have been credited (a known shape, a usable amount).
        let wouldBe = firstCredit(claim, owner: claimant, .unknown, sandbox)
        if next.owner == nil, wouldBe.state.status == .credited {
            next.owner = claimant
            next.productId = wouldBe.state.productId
            next.grant = wouldBe.state.grant
            next.quantity = wouldBe.state.quantity
            next.expiresDateMs = wouldBe.state.expiresDateMs
            next.book = wouldBe.state.book
            next.purchaseDateMs = wouldBe.state.purchaseDateMs
            next.productKind = wouldBe.state.productKind
        }
        return LedgerDecision(
            state: next, actions: [.recordRefusedClaim(userId: claimant, submissionId: submissionId, atMs: claim.atMs)])
    }

    // MARK: debit, recredit, revoke, subscription status

    private static func debit(_ revocationPercentage: Int64?, _ state: PurchaseState) -> LedgerDecision {
        var next = state
        switch state.status {
        case .unseen, .pendingOwner:
            // Refunded before it was credited: kept, and the credit is refused when it comes (or, for a prorated
            // refund of items, applied less the refund's share).
            next.status = .refused
            next.refusedPercentage = partial(revocationPercentage)
            return LedgerDecision(state: next, actions: [])
        case .refused:
            // Another refund before the credit: the larger share counts (a percentage is of the whole purchase).
            if let known = state.refusedPercentage {
                next.refusedPercentage = partial(revocationPercentage).map { max($0, known) }
            }
            return LedgerDecision(state: next, actions: [])
        case .credited, .recredited, .debited, .upgraded:
            break
        }
        guard let owner = state.owner else { return LedgerDecision(state: state, actions: []) }
        let wanted = share(of: state.fullAmount, revocationPercentage: revocationPercentage)
        // A further debit while debited (a second partial refund) takes only what its share adds to the last one;
        // after an upgrade, only what it adds to the unused share already taken.
        let alreadyTaken = max(
            state.status == .debited || state.status == .upgraded ? state.lastDebit : 0, state.upgradeTaken)
        let take = max(wanted - alreadyTaken, 0)
        var actions: [LedgerAction] = []
        if take > 0, case .item(let item, _) = state.grant {
            actions.append(.adjustBalance(owner: owner, item: item, delta: -take))
        }
        if state.isInForce, case .entitlement = state.grant {
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
            // What the refund took; an upgrade's share stays taken (it was not a refund).
            let refunded = max(state.lastDebit - state.upgradeTaken, 0)
            var actions: [LedgerAction] = []
            switch state.grant {
            case .item(let item, _) where refunded > 0:
                actions.append(.adjustBalance(owner: owner, item: item, delta: refunded))
            case .entitlement(let entitlement) where state.upgradedAtMs == nil:
                actions.append(
                    .grantEntitlement(owner: owner, entitlement: entitlement, expiresDateMs: state.expiresDateMs))
            default:
                break
            }
            next.status = .recredited
            next.amountCredited = state.amountCredited + refunded
            next.lastDebit = 0
            return LedgerDecision(state: next, actions: actions)
        case .refused:
            // The refund that refused the credit was reversed: the purchase is good again. A claimant already
            // known is credited now; otherwise the next claim credits as if nothing had happened.
            guard let owner = state.owner else {
                next.status = .unseen
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
            next.refusedPercentage = nil
            return LedgerDecision(state: next, actions: actions)
        case .unseen, .pendingOwner, .credited, .recredited, .upgraded:
            // Nothing was refunded (an upgrade is not a refund to reverse): nothing to give back.
            return LedgerDecision(state: state, actions: [])
        }
    }

    private static func revoke(_ state: PurchaseState) -> LedgerDecision {
        var next = state
        switch state.status {
        case .unseen, .pendingOwner:
            // Withdrawn before it was credited: like a full refund that came first.
            next.status = .refused
            next.refusedPercentage = nil
            return LedgerDecision(state: next, actions: [])
        case .credited, .recredited:
            // Family sharing shares entitlements only; no money is taken back.
            guard case .entitlement = state.grant else { return LedgerDecision(state: state, actions: []) }
            next.status = .debited
            next.lastDebit = 0
            return LedgerDecision(state: next, actions: [.endEntitlement])
        case .debited, .refused, .upgraded:
            return LedgerDecision(state: state, actions: [])
        }
    }

    /// A percentage below 100% (a prorated refund), else nil (all of it).
    private static func partial(_ revocationPercentage: Int64?) -> Int64? {
        guard let revocationPercentage, revocationPercentage < fullRevocation else { return nil }
        return max(revocationPercentage, 0)
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
