import LedgerRules
import Testing

/// Which credited period an upgrade replaced, as a table over one subscription's periods.
@Suite struct UpgradeRuleTests {
    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        let periods: [UpgradeRule.Period]
        var notified: Set<String> = []
        let replaced: [String]
        var testDescription: String { name }
    }

    static func period(
        _ key: String, _ product: String, from: Int64, to: Int64, inForce: Bool = true, reported: Bool = false,
        subscription: String = "o1"
    ) -> UpgradeRule.Period {
        UpgradeRule.Period(
            creditKey: key, originalTransactionId: subscription, productId: product, purchaseDateMs: from,
            expiresDateMs: to, inForce: inForce, upgradeReported: reported)
    }

    static let rows: [Row] = [
        Row(
            name: "an UPGRADE notification for a period bought inside another product's period replaces it",
            periods: [period("p1", "monthly", from: 0, to: 30), period("p2", "yearly", from: 10, to: 375)],
            notified: ["p2"], replaced: ["p1"]),
        Row(
            name: "is_upgraded on the old period is evidence too",
            periods: [period("p1", "monthly", from: 0, to: 30, reported: true), period("p2", "yearly", from: 10, to: 375)],
            replaced: ["p1"]),
        Row(
            name: "an overlap without evidence is not an upgrade",
            periods: [period("p1", "monthly", from: 0, to: 30), period("p2", "yearly", from: 10, to: 375)],
            replaced: []),
        Row(
            name: "the same product is a renewal, not an upgrade",
            periods: [period("p1", "monthly", from: 0, to: 30, reported: true), period("p2", "monthly", from: 10, to: 40)],
            replaced: []),
        Row(
            name: "a period starting when the old one ends (a downgrade at renewal) replaces nothing",
            periods: [period("p1", "yearly", from: 0, to: 365, reported: true), period("p2", "monthly", from: 365, to: 395)],
            replaced: []),
        Row(
            name: "another subscription's period replaces nothing",
            periods: [
                period("p1", "monthly", from: 0, to: 30, reported: true),
                period("p2", "yearly", from: 10, to: 375, subscription: "o2"),
            ], replaced: []),
        Row(
            name: "a period already taken back is not replaced again",
            periods: [
                period("p1", "monthly", from: 0, to: 30, inForce: false, reported: true),
                period("p2", "yearly", from: 10, to: 375),
            ], replaced: []),
        Row(
            name: "a replacement that was itself refunded replaces nothing",
            periods: [
                period("p1", "monthly", from: 0, to: 30, reported: true),
                period("p2", "yearly", from: 10, to: 375, inForce: false),
            ], replaced: []),
    ]

    @Test(arguments: rows)
    func row(_ row: Row) {
        let found = UpgradeRule.replacements(among: row.periods, upgradeNotified: row.notified)
        #expect(found.map(\.creditKey) == row.replaced)
    }

    @Test func theEarliestReplacementIsTheUpgrade() {
        let found = UpgradeRule.replacements(
            among: [
                Self.period("p1", "monthly", from: 0, to: 30, reported: true),
                Self.period("p3", "premium", from: 20, to: 385), Self.period("p2", "yearly", from: 10, to: 375),
            ], upgradeNotified: [])
        #expect(found.map(\.creditKey) == ["p1"], "p2 was not reported upgraded: p3 is a change of its own")
        #expect(found.first?.newPurchaseDateMs == 10)
    }
}
