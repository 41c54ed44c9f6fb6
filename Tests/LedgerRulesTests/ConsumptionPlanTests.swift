import LedgerRules
import Testing

/// What the refund responder does with a recorded request, as a table: mode, time, owner and consent in; no answer
/// (and why), a dry run or an answer to send out. The checks apply in this order: the mode, the ownership (a
/// family-shared transaction: Apple refuses any answer, 4000185), the deadline, the owner, the consent.
@Suite struct ConsumptionPlanTests {
    typealias C = ConsumptionRules

    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        var mode: C.Mode = .send
        var nowMs: Int64 = 1_000
        var deadlineMs: Int64 = 10_000
        var state = PurchaseState(
            status: .credited, owner: "u1", grant: .item(name: "gems", amount: 100), amountCredited: 100)
        var unitsConsumed: Int64? = 90
        var consented: Bool? = true
        var request = C.Request()
        let plan: C.Plan
        var testDescription: String { name }
    }

    static let policy = C.Policy(
        rules: [C.PolicyRule(delivered: true, consumedAbove: 80_000, preference: .decline)], sampleContentProvided: true)
    static let declined = C.Answer(
        facts: C.Facts(deliveryStatus: .delivered, consumedPercentage: 90_000), rule: 0, preference: .decline,
        sampleContentProvided: true)

    static let rows: [Row] = [
        Row(name: "consented, 90% spent: declined by rule 0", plan: .send(declined)),
        Row(name: "a dry run computes the same answer and sends nothing", mode: .dryRun, plan: .dryRun(declined)),
        Row(name: "the responder off: nothing computed", mode: .off, plan: .unanswered(.responderOff)),
        Row(
            name: "off wins over a passed deadline (nothing was ever going to be sent)", mode: .off, nowMs: 20_000,
            plan: .unanswered(.responderOff)),
        Row(name: "at the deadline: too late, counted late", nowMs: 10_000, plan: .unanswered(.deadlinePassed)),
        Row(
            name: "a family-shared transaction: never answered (Apple refuses it, 4000185)",
            request: C.Request(ownership: .familyShared), plan: .unanswered(.familyShared)),
        Row(
            name: "family-shared, in a dry run too: nothing Apple would take to record",
            mode: .dryRun, request: C.Request(ownership: .familyShared), plan: .unanswered(.familyShared)),
        Row(
            name: "family-shared past the deadline: family_shared, not late",
            nowMs: 20_000, request: C.Request(ownership: .familyShared), plan: .unanswered(.familyShared)),
        Row(
            name: "family-shared while off: responder_off (nothing is looked at)",
            mode: .off, request: C.Request(ownership: .familyShared), plan: .unanswered(.responderOff)),
        Row(
            name: "family-shared with no owner and no consent: family_shared first",
            state: PurchaseState(status: .pendingOwner), consented: nil, request: C.Request(ownership: .familyShared),
            plan: .unanswered(.familyShared)),
        Row(name: "never asked for consent: nothing sent", consented: nil, plan: .unanswered(.noConsent)),
        Row(name: "consent withdrawn: nothing sent", consented: false, plan: .unanswered(.noConsent)),
        Row(
            name: "no owner known (the claim waits): nobody can have consented",
            state: PurchaseState(status: .pendingOwner), consented: nil, plan: .unanswered(.noOwner)),
        Row(
            name: "no rule matches: the facts without a preference",
            unitsConsumed: 0,
            plan: .send(
                C.Answer(
                    facts: C.Facts(deliveryStatus: .delivered, consumedPercentage: 0), rule: nil, preference: nil,
                    sampleContentProvided: true))),
    ]

    @Test(arguments: rows)
    func plan(_ row: Row) {
        let plan = C.plan(
            mode: row.mode, nowMs: row.nowMs, deadlineMs: row.deadlineMs, state: row.state, consumed: row.unitsConsumed,
            consented: row.consented, policy: Self.policy, request: row.request)
        #expect(plan == row.plan)
    }

    /// (attempts failed, now, deadline) → when the next try starts: doubling from the base, at most an hour, a last
    /// try just before the deadline, none when no time is left.
    static let retryRows: [(Int, Int64, Int64, Int64?)] = [
        (1, 0, C.answerWindowMs, 5_000),
        (2, 0, C.answerWindowMs, 10_000),
        (4, 0, C.answerWindowMs, 40_000),
        (30, 0, C.answerWindowMs, 3_600_000),
        (3, 9_000, 10_000, 9_999),
        (1, 9_999, 10_000, nil),
    ]

    @Test(arguments: retryRows)
    func retries(attempts: Int, nowMs: Int64, deadlineMs: Int64, expected: Int64?) {
        #expect(C.retryAtMs(attempts: attempts, nowMs: nowMs, deadlineMs: deadlineMs, baseMs: 5_000) == expected)
    }
}

/// What is sent for each kind of product, through the whole plan: the kind the request names wins over the one
/// recorded, a subscription period's key tells an auto-renewable, policy rules condition on the kind and on Apple's
/// reason, and a rule whose preference Apple refuses for the facts at hand gives way to the next.
extension ConsumptionPlanTests {
    struct BodyRow: CustomTestStringConvertible, Sendable {
        let name: String
        var state = PurchaseState(
            status: .credited, owner: "u1", grant: .item(name: "gems", amount: 100), amountCredited: 100)
        var unitsConsumed: Int64? = 40
        var nowMs: Int64 = 1_000
        var request = C.Request()
        /// The rule that gave the preference, and the body: its consumption percentage and preference.
        let rule: Int?
        let percentage: Int64?
        let preference: C.RefundPreference?
        var testDescription: String { name }
    }

    /// A game's policy: subscriptions prorated by Apple, an accidental purchase granted in full, consumables
    /// prorated while mostly unspent, declined once mostly spent.
    static let gamePolicy = C.Policy(rules: [
        C.PolicyRule(productKinds: [.autoRenewable], preference: .grantProrated),
        C.PolicyRule(requestReasons: ["UNINTENDED_PURCHASE"], preference: .grantFull),
        C.PolicyRule(
            delivered: true, consumedAbove: 0, consumedAtMost: 50_000, productKinds: [.consumable],
            preference: .grantProrated),
        C.PolicyRule(delivered: true, consumedAbove: 50_000, preference: .decline),
    ])

    static let pro = PurchaseState(
        status: .credited, owner: "u1", grant: .entitlement(name: "pro"), expiresDateMs: 4_000, purchaseDateMs: 0)

    static let bodyRows: [BodyRow] = [
        BodyRow(
            name: "a consumable 40% spent: prorated, with its share", request: C.Request(productKind: .consumable),
            rule: 2, percentage: 40_000, preference: .grantProrated),
        BodyRow(
            name: "a consumable 70% spent: declined, with its share", unitsConsumed: 70,
            request: C.Request(productKind: .consumable), rule: 3, percentage: 70_000, preference: .decline),
        BodyRow(
            name: "a consumable bought by accident: granted in full (Apple's reason)",
            request: C.Request(productKind: .consumable, reason: "UNINTENDED_PURCHASE"), rule: 1, percentage: 40_000,
            preference: .grantFull),
        BodyRow(
            name: "the kind recorded on the purchase serves when the request names none",
            state: PurchaseState(
                status: .credited, owner: "u1", grant: .item(name: "gems", amount: 100), amountCredited: 100,
                productKind: .consumable),
            rule: 2, percentage: 40_000, preference: .grantProrated),
        BodyRow(
            name: "an auto-renewable period 75% elapsed: prorated by Apple, no share sent", state: pro, nowMs: 3_000,
            request: C.Request(productKind: .autoRenewable), rule: 0, percentage: nil, preference: .grantProrated),
        BodyRow(
            name: "a period's key tells an auto-renewable when nothing names its kind", state: pro, nowMs: 3_000,
            request: C.Request(isSubscriptionPeriod: true), rule: 0, percentage: nil, preference: .grantProrated),
        BodyRow(
            name: "a non-consumable (an entitlement for good): no share known, no rule matches, no preference",
            state: PurchaseState(status: .credited, owner: "u1", grant: .entitlement(name: "levels")),
            request: C.Request(productKind: .nonConsumable), rule: nil, percentage: nil, preference: nil),
        BodyRow(
            name: "unknown kind, 40% spent: no share sent, and GRANT_PRORATED, refused without one, gives way",
            rule: nil, percentage: nil, preference: nil),
        BodyRow(
            name: "unknown kind, 70% spent: declined without a share", unitsConsumed: 70, rule: 3, percentage: nil,
            preference: .decline),
    ]

    @Test(arguments: bodyRows)
    func body(_ row: BodyRow) throws {
        let plan = C.plan(
            mode: .send, nowMs: row.nowMs, deadlineMs: 10_000, state: row.state, consumed: row.unitsConsumed,
            consented: true, policy: Self.gamePolicy, request: row.request)
        guard case .send(let answer) = plan else {
            Issue.record("not sent: \(plan)")
            return
        }
        #expect(answer.rule == row.rule)
        #expect(answer.body.consumptionPercentage == row.percentage)
        #expect(answer.body.refundPreference == row.preference)
        #expect(C.refusal(of: answer.body) == nil)
    }
}
