import LedgerRules
import Testing

/// Which policy rules a policy file may hold: a rule that can give a preference Apple refuses for some purchase it
/// matches (`ConsumptionRules.refusedCase`) is refused at load, with an example of that purchase.
@Suite struct ConsumptionPolicyCheckTests {
    typealias C = ConsumptionRules

    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        let rule: C.PolicyRule
        /// nil: the rule is accepted; else words of the example refused.
        let refusedFor: String?
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "DECLINE for everything", rule: C.PolicyRule(preference: .decline), refusedFor: nil),
        Row(name: "GRANT_FULL when undelivered", rule: C.PolicyRule(delivered: false, preference: .grantFull), refusedFor: nil),
        Row(
            name: "GRANT_PRORATED for everything: a consumable whose consumption is unknown",
            rule: C.PolicyRule(preference: .grantProrated),
            refusedFor: "a consumable purchase, delivered, consumption unknown"),
        Row(
            name: "GRANT_PRORATED at most 10% consumed (the old dev policy): 0 % matches",
            rule: C.PolicyRule(delivered: true, consumedAtMost: 10_000, preference: .grantProrated),
            refusedFor: "a consumable purchase, delivered, 0 % consumed"),
        Row(
            name: "GRANT_PRORATED for auto-renewables: Apple computes the share",
            rule: C.PolicyRule(productKinds: [.autoRenewable], preference: .grantProrated), refusedFor: nil),
        Row(
            name: "GRANT_PRORATED for consumables delivered, above 0 and at most 99.999 %",
            rule: C.PolicyRule(
                delivered: true, consumedAbove: 0, consumedAtMost: 99_999, productKinds: [.consumable],
                preference: .grantProrated),
            refusedFor: nil),
        Row(
            name: "... up to 100 %: all of it consumed matches",
            rule: C.PolicyRule(
                delivered: true, consumedAbove: 0, consumedAtMost: 100_000, productKinds: [.consumable],
                preference: .grantProrated),
            refusedFor: "a consumable purchase, delivered, 100 % consumed"),
        Row(
            name: "... delivered or not: undelivered is sent as 0 %",
            rule: C.PolicyRule(
                consumedAbove: 0, consumedAtMost: 50_000, productKinds: [.nonRenewing], preference: .grantProrated),
            refusedFor: "a non_renewing purchase, undelivered"),
        Row(
            name: "... for unknown kinds too: no share can be sent for them",
            rule: C.PolicyRule(
                delivered: true, consumedAbove: 0, consumedAtMost: 50_000, productKinds: [.consumable, nil],
                preference: .grantProrated),
            refusedFor: "a purchase of unknown product type, delivered"),
        Row(
            name: "GRANT_PRORATED for auto-renewables and consumables in range, for one reason",
            rule: C.PolicyRule(
                delivered: true, consumedAbove: 0, consumedAtMost: 50_000, productKinds: [.autoRenewable, .consumable],
                requestReasons: ["UNSATISFIED_WITH_PURCHASE"], preference: .grantProrated),
            refusedFor: nil),
        Row(
            name: "GRANT_PRORATED for one reason, any kind: the reason narrows nothing Apple checks",
            rule: C.PolicyRule(requestReasons: ["LEGAL"], preference: .grantProrated),
            refusedFor: "reason LEGAL"),
    ]

    @Test(arguments: rows)
    func row(_ row: Row) {
        let refused = C.refusedCase(of: row.rule)
        if let expected = row.refusedFor {
            let described = refused.map { C.describe($0.facts) } ?? "accepted"
            #expect(described.contains(expected), "\(described)")
            #expect(refused?.why.isEmpty == false)
        } else {
            #expect(refused == nil, "\(refused.map { C.describe($0.facts) + ": " + $0.why } ?? "")")
        }
    }
}
