import LedgerRules
import Testing

/// What the refund responder does with a recorded request, as a table: mode, time, owner and consent in; no answer
/// (and why), a dry run or an answer to send out. The checks apply in this order: the mode, the deadline, the owner,
/// the consent.
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
            consented: row.consented, policy: Self.policy)
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
