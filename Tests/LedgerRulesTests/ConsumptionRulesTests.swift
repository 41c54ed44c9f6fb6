import LedgerRules
import Testing

/// What the ledger would tell Apple about a refund request, as a table: the purchase's state, the units of it consumed
/// (its lot's spends, first in, first out) and the time in; the delivery status, the consumed share and the policy's preference out.
@Suite struct ConsumptionRulesTests {
    typealias C = ConsumptionRules

    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        let state: PurchaseState
        var unitsConsumed: Int64? = nil
        var nowMs: Int64 = 0
        let delivery: C.DeliveryStatus
        let consumed: Int64?
        let preference: C.RefundPreference?
        var testDescription: String { name }
    }

    static let gems = Grant.item(name: "gems", amount: 100)
    static let pro = Grant.entitlement(name: "pro")
    /// Decline above 80% consumed, grant in full when undelivered, grant prorated below 20%.
    static let policy: [C.PolicyRule] = [
        C.PolicyRule(delivered: true, consumedAbove: 80_000, preference: .decline),
        C.PolicyRule(delivered: false, preference: .grantFull),
        C.PolicyRule(delivered: true, consumedAtMost: 20_000, preference: .grantProrated),
    ]

    static let rows: [Row] = [
        Row(
            name: "items none of which were spent: delivered, 0% consumed; Apple refuses GRANT_PRORATED at 0 %, so "
                + "that rule does not match and none gives a preference",
            state: PurchaseState(status: .credited, owner: "u1", grant: gems, quantity: 2, amountCredited: 200),
            unitsConsumed: 0, delivery: .delivered, consumed: 0, preference: nil),
        Row(
            name: "a consumable 5% consumed: the prorated grant Apple accepts",
            state: PurchaseState(
                status: .credited, owner: "u1", grant: gems, amountCredited: 100, productKind: .consumable),
            unitsConsumed: 5, delivery: .delivered, consumed: 5_000, preference: .grantProrated),
        Row(
            name: "items mostly spent: 90% consumed, declined",
            state: PurchaseState(status: .credited, owner: "u1", grant: gems, amountCredited: 100), unitsConsumed: 90,
            delivery: .delivered, consumed: 90_000, preference: .decline),
        Row(
            name: "a third spent rounds half up in thousandths of a percent; no rule matches: no preference",
            state: PurchaseState(status: .credited, owner: "u1", grant: gems, quantity: 3, amountCredited: 300),
            unitsConsumed: 100, delivery: .delivered, consumed: 33_333, preference: nil),
        Row(
            name: "more consumed than credited counts as all of it",
            state: PurchaseState(status: .credited, owner: "u1", grant: gems, amountCredited: 100), unitsConsumed: 140,
            delivery: .delivered, consumed: 100_000, preference: .decline),
        Row(
            name: "a claim still waiting for its owner is undelivered: granted in full",
            state: PurchaseState(status: .pendingOwner), delivery: .undeliveredOther, consumed: nil,
            preference: .grantFull),
        Row(
            name: "a purchase the ledger never saw is undelivered",
            state: .unknown, delivery: .undeliveredOther, consumed: nil, preference: .grantFull),
        Row(
            name: "a subscription period three quarters elapsed",
            state: PurchaseState(status: .credited, owner: "u1", grant: pro, expiresDateMs: 4_000, purchaseDateMs: 0),
            nowMs: 3_000, delivery: .delivered, consumed: 75_000, preference: nil),
        Row(
            name: "a subscription period over is all consumed",
            state: PurchaseState(status: .credited, owner: "u1", grant: pro, expiresDateMs: 4_000, purchaseDateMs: 0),
            nowMs: 9_000, delivery: .delivered, consumed: 100_000, preference: .decline),
        Row(
            name: "an entitlement for good has no consumed share (no bound matches an unknown share)",
            state: PurchaseState(status: .credited, owner: "u1", grant: pro), delivery: .delivered, consumed: nil,
            preference: nil),
        Row(
            name: "a refunded purchase was still delivered",
            state: PurchaseState(status: .debited, owner: "u1", grant: gems, amountCredited: 100, amountDebited: 100),
            unitsConsumed: 100, delivery: .delivered, consumed: 100_000, preference: .decline),
    ]

    @Test(arguments: rows)
    func row(_ row: Row) {
        var facts = C.facts(of: row.state, consumed: row.unitsConsumed, nowMs: row.nowMs)
        facts.productKind = row.state.productKind
        #expect(facts.deliveryStatus == row.delivery)
        #expect(facts.consumedPercentage == row.consumed)
        #expect(C.preference(for: facts, rules: Self.policy)?.preference == row.preference)
    }

    @Test func theFirstMatchingRuleWinsAndIsNamed() {
        let facts = C.Facts(deliveryStatus: .delivered, consumedPercentage: 90_000)
        let rules = [C.PolicyRule(preference: .grantFull), C.PolicyRule(delivered: true, preference: .decline)]
        #expect(C.preference(for: facts, rules: rules)?.rule == 0)
        #expect(C.preference(for: facts, rules: [])?.rule == nil)
    }
}
