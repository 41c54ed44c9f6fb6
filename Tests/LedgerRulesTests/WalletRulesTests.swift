import LedgerRules
import Testing

/// The wallet's arithmetic as a table: each row starts from an empty wallet of one item, applies its steps in order
/// under its clawback policy, and states what each step answered and where every lot, the balance, the debt and the
/// unrecovered units end. This table is the specification of spends, grants and take-backs; docs/CREDITING.md ("The
/// wallet") gives the reasons.
@Suite struct WalletRulesTests {
    enum Step: Sendable {
        /// A purchase credited at `at`: a lot keyed by its credit key.
        case credit(String, Int64, at: Int64)
        /// A grant at `at`.
        case grant(String, Int64, at: Int64)
        case spend(Int64)
        /// A refund's share of a purchase, as the clawback `key`.
        case refund(String, Int64, key: String)
        /// An upgrade's unused share of a purchase.
        case upgrade(String, Int64)
        /// A reversed refund of the purchase.
        case reverse(String)
    }

    enum Outcome: Sendable, Equatable {
        case added(repaid: [String: Int64])
        case spent([LotShare])
        case refused(WalletRules.Refusal)
        case took(taken: Int64, shortfall: Int64)
        case reversed(restored: Int64, debtCancelled: Int64, unrecoveredCancelled: Int64)
        /// A reversal whose restored units paid a shortfall or debt before reaching the balance.
        case reversedSettling(
            restored: Int64, debtCancelled: Int64, unrecoveredCancelled: Int64, settled: [WalletRules.Settlement])
        case overflow
    }

    /// A lot as it ends: (spent, taken, covered).
    struct LotEnd: Sendable, Equatable {
        let spent: Int64, taken: Int64, covered: Int64
        init(_ spent: Int64, _ taken: Int64, _ covered: Int64) {
            self.spent = spent
            self.taken = taken
            self.covered = covered
        }
    }

    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        var policy: ClawbackPolicy = .floor
        var start = Wallet()
        let steps: [Step]
        let outcomes: [Outcome]
        let lots: [String: LotEnd]
        let balance: Int64
        var debt: Int64 = 0
        var unrecovered: Int64 = 0
        var testDescription: String { name }
    }

    static func share(_ lot: String, _ amount: Int64) -> LotShare { LotShare(lot: lot, amount: amount) }

    static let rows: [Row] = [
        // MARK: spends, first in, first out
        Row(
            name: "a spend consumes the oldest lot first, then the next",
            steps: [.credit("p1", 100, at: 1), .credit("p2", 100, at: 2), .spend(150)],
            outcomes: [.added(repaid: [:]), .added(repaid: [:]), .spent([share("p1", 100), share("p2", 50)])],
            lots: ["p1": LotEnd(100, 0, 0), "p2": LotEnd(50, 0, 0)], balance: 50),
        Row(
            name: "lots added at the same time are consumed in key order",
            steps: [.credit("b", 10, at: 1), .credit("a", 10, at: 1), .spend(15)],
            outcomes: [.added(repaid: [:]), .added(repaid: [:]), .spent([share("a", 10), share("b", 5)])],
            lots: ["a": LotEnd(10, 0, 0), "b": LotEnd(5, 0, 0)], balance: 5),
        Row(
            name: "purchased and granted lots are consumed alike, by time",
            steps: [.grant("grant:g", 50, at: 1), .credit("p", 100, at: 2), .spend(60)],
            outcomes: [.added(repaid: [:]), .added(repaid: [:]), .spent([share("grant:g", 50), share("p", 10)])],
            lots: ["grant:g": LotEnd(50, 0, 0), "p": LotEnd(10, 0, 0)], balance: 90),
        Row(
            name: "two 100-gem purchases with 100 of 200 spent: the first all consumed, the second not at all",
            steps: [.credit("p1", 100, at: 1), .credit("p2", 100, at: 2), .spend(60), .spend(40)],
            outcomes: [.added(repaid: [:]), .added(repaid: [:]), .spent([share("p1", 60)]), .spent([share("p1", 40)])],
            lots: ["p1": LotEnd(100, 0, 0), "p2": LotEnd(0, 0, 0)], balance: 100),
        Row(
            name: "a spend over the balance is refused and changes nothing",
            steps: [.credit("p", 100, at: 1), .spend(101), .spend(100)],
            outcomes: [.added(repaid: [:]), .refused(.insufficientBalance(available: 100)), .spent([share("p", 100)])],
            lots: ["p": LotEnd(100, 0, 0)], balance: 0),
        Row(
            name: "a spend from an empty wallet is refused",
            steps: [.spend(1)], outcomes: [.refused(.insufficientBalance(available: 0))], lots: [:], balance: 0),

        // MARK: refunds under floor
        Row(
            name: "a refund of an unspent purchase takes its own units",
            steps: [.credit("p", 100, at: 1), .refund("p", 100, key: "e1")],
            outcomes: [.added(repaid: [:]), .took(taken: 100, shortfall: 0)],
            lots: ["p": LotEnd(0, 100, 0)], balance: 0),
        Row(
            name: "floor: a refund after spending takes what is left and records the rest as unrecovered",
            steps: [.credit("p", 100, at: 1), .spend(70), .refund("p", 100, key: "e1")],
            outcomes: [.added(repaid: [:]), .spent([share("p", 70)]), .took(taken: 30, shortfall: 70)],
            lots: ["p": LotEnd(70, 30, 0)], balance: 0, unrecovered: 70),
        Row(
            name: "the spent part of a refund is taken from the user's other purchases, oldest first",
            steps: [
                .credit("p1", 100, at: 1), .credit("p2", 100, at: 2), .credit("p3", 100, at: 3), .spend(100),
                .refund("p1", 100, key: "e1"),
            ],
            outcomes: [
                .added(repaid: [:]), .added(repaid: [:]), .added(repaid: [:]), .spent([share("p1", 100)]),
                .took(taken: 100, shortfall: 0),
            ],
            lots: ["p1": LotEnd(100, 0, 0), "p2": LotEnd(0, 0, 100), "p3": LotEnd(0, 0, 0)], balance: 100),
        Row(
            name: "a refund never takes a grant: what purchases cannot cover is unrecovered",
            steps: [.credit("p", 100, at: 1), .grant("grant:g", 100, at: 2), .spend(100), .refund("p", 100, key: "e1")],
            outcomes: [.added(repaid: [:]), .added(repaid: [:]), .spent([share("p", 100)]), .took(taken: 0, shortfall: 100)],
            lots: ["p": LotEnd(100, 0, 0), "grant:g": LotEnd(0, 0, 0)], balance: 100, unrecovered: 100),
        Row(
            name: "the same clawback twice takes once",
            steps: [.credit("p", 100, at: 1), .refund("p", 50, key: "e1"), .refund("p", 50, key: "e1")],
            outcomes: [.added(repaid: [:]), .took(taken: 50, shortfall: 0), .took(taken: 0, shortfall: 0)],
            lots: ["p": LotEnd(0, 50, 0)], balance: 50),

        // MARK: refunds under debt
        Row(
            name: "debt: the balance goes negative and spends are refused until a purchase repays it",
            policy: .debt,
            steps: [
                .credit("p1", 100, at: 1), .spend(70), .refund("p1", 100, key: "e1"), .spend(1),
                .credit("p2", 100, at: 2), .spend(30),
            ],
            outcomes: [
                .added(repaid: [:]), .spent([share("p1", 70)]), .took(taken: 30, shortfall: 70),
                .refused(.debt(outstanding: 70)), .added(repaid: ["e1": 70]), .spent([share("p2", 30)]),
            ],
            lots: ["p1": LotEnd(70, 30, 0), "p2": LotEnd(30, 0, 70)], balance: 0),
        Row(
            name: "debt: a grant repays debt too",
            policy: .debt,
            steps: [.credit("p", 100, at: 1), .spend(100), .refund("p", 100, key: "e1"), .grant("grant:g", 40, at: 2)],
            outcomes: [
                .added(repaid: [:]), .spent([share("p", 100)]), .took(taken: 0, shortfall: 100),
                .added(repaid: ["e1": 40]),
            ],
            lots: ["p": LotEnd(100, 0, 0), "grant:g": LotEnd(0, 0, 40)], balance: -60, debt: 60),
        Row(
            name: "debt: the oldest debt is repaid first",
            policy: .debt,
            steps: [
                .credit("p1", 50, at: 1), .credit("p2", 50, at: 2), .spend(100), .refund("p1", 50, key: "e1"),
                .refund("p2", 50, key: "e2"), .credit("p3", 70, at: 3),
            ],
            outcomes: [
                .added(repaid: [:]), .added(repaid: [:]), .spent([share("p1", 50), share("p2", 50)]),
                .took(taken: 0, shortfall: 50), .took(taken: 0, shortfall: 50), .added(repaid: ["e1": 50, "e2": 20]),
            ],
            lots: ["p1": LotEnd(50, 0, 0), "p2": LotEnd(50, 0, 0), "p3": LotEnd(0, 0, 70)], balance: -30, debt: 30),

        // MARK: reversals
        Row(
            name: "floor: a reversal gives back exactly what the refund took and cancels the unrecovered rest",
            steps: [
                .credit("p1", 100, at: 1), .credit("p2", 100, at: 2), .spend(150), .refund("p1", 100, key: "e1"),
                .reverse("p1"),
            ],
            outcomes: [
                .added(repaid: [:]), .added(repaid: [:]), .spent([share("p1", 100), share("p2", 50)]),
                .took(taken: 50, shortfall: 50), .reversed(restored: 50, debtCancelled: 0, unrecoveredCancelled: 50),
            ],
            lots: ["p1": LotEnd(100, 0, 0), "p2": LotEnd(50, 0, 0)], balance: 50),
        Row(
            name: "debt: a reversal restores the repayments to the lots that made them",
            policy: .debt,
            steps: [
                .credit("p1", 100, at: 1), .spend(100), .refund("p1", 100, key: "e1"), .credit("p2", 100, at: 2),
                .reverse("p1"),
            ],
            outcomes: [
                .added(repaid: [:]), .spent([share("p1", 100)]), .took(taken: 0, shortfall: 100),
                .added(repaid: ["e1": 100]), .reversed(restored: 100, debtCancelled: 0, unrecoveredCancelled: 0),
            ],
            lots: ["p1": LotEnd(100, 0, 0), "p2": LotEnd(0, 0, 0)], balance: 100),
        Row(
            name: "debt: a reversal cancels the outstanding debt",
            policy: .debt,
            steps: [.credit("p", 100, at: 1), .spend(60), .refund("p", 100, key: "e1"), .reverse("p")],
            outcomes: [
                .added(repaid: [:]), .spent([share("p", 60)]), .took(taken: 40, shortfall: 60),
                .reversed(restored: 40, debtCancelled: 60, unrecoveredCancelled: 0),
            ],
            lots: ["p": LotEnd(60, 0, 0)], balance: 40),
        Row(
            name: "a reversal gives back every refund since the last one (two partial refunds)",
            steps: [.credit("p", 100, at: 1), .refund("p", 30, key: "e1"), .refund("p", 50, key: "e2"), .reverse("p"), .reverse("p")],
            outcomes: [
                .added(repaid: [:]), .took(taken: 30, shortfall: 0), .took(taken: 50, shortfall: 0),
                .reversed(restored: 80, debtCancelled: 0, unrecoveredCancelled: 0),
                .reversed(restored: 0, debtCancelled: 0, unrecoveredCancelled: 0),
            ],
            lots: ["p": LotEnd(0, 0, 0)], balance: 100),
        Row(
            name: "an upgrade's take is never given back by a reversal",
            steps: [.credit("p", 300, at: 1), .upgrade("p", 100), .refund("p", 200, key: "e1"), .reverse("p")],
            outcomes: [
                .added(repaid: [:]), .took(taken: 100, shortfall: 0), .took(taken: 200, shortfall: 0),
                .reversed(restored: 200, debtCancelled: 0, unrecoveredCancelled: 0),
            ],
            lots: ["p": LotEnd(0, 100, 0)], balance: 200),
        Row(
            name: "a reversal with nothing refunded gives nothing",
            steps: [.credit("p", 100, at: 1), .reverse("p")],
            outcomes: [.added(repaid: [:]), .reversed(restored: 0, debtCancelled: 0, unrecoveredCancelled: 0)],
            lots: ["p": LotEnd(0, 0, 0)], balance: 100),

        Row(
            name: "an upgrade's clawback recorded once takes nothing again after a refund and its reversal",
            steps: [
                .credit("p", 300, at: 1), .upgrade("p", 200), .refund("p", 100, key: "e1"), .reverse("p"),
                .upgrade("p", 200),
            ],
            outcomes: [
                .added(repaid: [:]), .took(taken: 200, shortfall: 0), .took(taken: 100, shortfall: 0),
                .reversed(restored: 100, debtCancelled: 0, unrecoveredCancelled: 0), .took(taken: 0, shortfall: 0),
            ],
            lots: ["p": LotEnd(0, 200, 0)], balance: 100),

        // MARK: reversals onto lots whose own purchase was refunded since
        Row(
            name: "floor: units a reversal restores to a refunded purchase's lot pay that refund's unrecovered units first",
            steps: [
                .credit("p1", 100, at: 1), .credit("p2", 100, at: 2), .spend(100), .refund("p1", 100, key: "e1"),
                .refund("p2", 100, key: "e2"), .reverse("p1"),
            ],
            outcomes: [
                .added(repaid: [:]), .added(repaid: [:]), .spent([share("p1", 100)]), .took(taken: 100, shortfall: 0),
                .took(taken: 0, shortfall: 100),
                .reversedSettling(
                    restored: 100, debtCancelled: 0, unrecoveredCancelled: 0,
                    settled: [WalletRules.Settlement(clawback: "e2", lot: "p2", amount: 100, ofDebt: false)]),
            ],
            lots: ["p1": LotEnd(100, 0, 0), "p2": LotEnd(0, 100, 0)], balance: 0),
        Row(
            name: "floor: ...and reversing that purchase's refund too gives its units back",
            steps: [
                .credit("p1", 100, at: 1), .credit("p2", 100, at: 2), .spend(100), .refund("p1", 100, key: "e1"),
                .refund("p2", 100, key: "e2"), .reverse("p1"), .reverse("p2"),
            ],
            outcomes: [
                .added(repaid: [:]), .added(repaid: [:]), .spent([share("p1", 100)]), .took(taken: 100, shortfall: 0),
                .took(taken: 0, shortfall: 100),
                .reversedSettling(
                    restored: 100, debtCancelled: 0, unrecoveredCancelled: 0,
                    settled: [WalletRules.Settlement(clawback: "e2", lot: "p2", amount: 100, ofDebt: false)]),
                .reversed(restored: 100, debtCancelled: 0, unrecoveredCancelled: 0),
            ],
            lots: ["p1": LotEnd(100, 0, 0), "p2": LotEnd(0, 0, 0)], balance: 100),
        Row(
            name: "debt: units a reversal restores to a refunded purchase's lot repay that refund's debt first",
            policy: .debt,
            steps: [
                .credit("p1", 100, at: 1), .credit("p2", 100, at: 2), .spend(100), .refund("p1", 100, key: "e1"),
                .refund("p2", 100, key: "e2"), .reverse("p1"),
            ],
            outcomes: [
                .added(repaid: [:]), .added(repaid: [:]), .spent([share("p1", 100)]), .took(taken: 100, shortfall: 0),
                .took(taken: 0, shortfall: 100),
                .reversedSettling(
                    restored: 100, debtCancelled: 0, unrecoveredCancelled: 0,
                    settled: [WalletRules.Settlement(clawback: "e2", lot: "p2", amount: 100, ofDebt: true)]),
            ],
            lots: ["p1": LotEnd(100, 0, 0), "p2": LotEnd(0, 100, 0)], balance: 0),
        Row(
            name: "debt: units a reversal restores repay another purchase's debt, so spends are not refused",
            policy: .debt,
            steps: [
                .credit("p1", 100, at: 1), .credit("p2", 100, at: 2), .credit("p3", 150, at: 3), .spend(200),
                .refund("p1", 100, key: "e1"), .refund("p2", 100, key: "e2"), .reverse("p1"), .spend(50),
            ],
            outcomes: [
                .added(repaid: [:]), .added(repaid: [:]), .added(repaid: [:]),
                .spent([share("p1", 100), share("p2", 100)]), .took(taken: 100, shortfall: 0),
                .took(taken: 50, shortfall: 50),
                .reversedSettling(
                    restored: 100, debtCancelled: 0, unrecoveredCancelled: 0,
                    settled: [WalletRules.Settlement(clawback: "e2", lot: "p3", amount: 50, ofDebt: true)]),
                .spent([share("p3", 50)]),
            ],
            lots: ["p1": LotEnd(100, 0, 0), "p2": LotEnd(100, 0, 0), "p3": LotEnd(50, 0, 100)], balance: 0),
        Row(
            name: "floor: a back-filled opening debt is repaid by the units a reversal restores",
            start: Wallet(
                balance: -100, debt: 100,
                lots: [WalletLot(key: "c1", kind: .purchase, amount: 100, taken: 100, addedAtMs: 1)],
                clawbacks: [
                    Clawback(
                        key: "refund-before-schema-6:c1", creditKey: "c1", kind: .refund, requested: 100,
                        takes: [share("c1", 100)], atMs: 1),
                    Clawback(key: "opening:production:gems", creditKey: nil, kind: .opening, requested: 100, debt: 100, atMs: 0),
                ]),
            steps: [.reverse("c1"), .credit("p", 10, at: 2), .spend(10)],
            outcomes: [
                .reversedSettling(
                    restored: 100, debtCancelled: 0, unrecoveredCancelled: 0,
                    settled: [
                        WalletRules.Settlement(clawback: "opening:production:gems", lot: "c1", amount: 100, ofDebt: true)
                    ]),
                .added(repaid: [:]), .spent([share("p", 10)]),
            ],
            lots: ["c1": LotEnd(0, 0, 100), "p": LotEnd(10, 0, 0)], balance: 0),

        // MARK: limits
        Row(
            name: "a lot that would overflow the balance is refused and changes nothing",
            start: Wallet(balance: Int64.max - 10, lots: [WalletLot(key: "old", kind: .grant, amount: Int64.max - 10, addedAtMs: 0)]),
            steps: [.grant("grant:g", 11, at: 1), .grant("grant:h", 10, at: 2)],
            outcomes: [.overflow, .added(repaid: [:])],
            lots: ["old": LotEnd(0, 0, 0), "grant:h": LotEnd(0, 0, 0)], balance: Int64.max),
        Row(
            name: "debt: a take-back whose debt would pass 64 bits is refused and changes nothing",
            policy: .debt,
            start: Wallet(
                balance: -(Int64.max - 5), debt: Int64.max - 5,
                lots: [WalletLot(key: "p", kind: .purchase, amount: 100, spent: 100, addedAtMs: 1)],
                clawbacks: [Clawback(key: "old", creditKey: nil, kind: .opening, requested: Int64.max - 5, debt: Int64.max - 5, atMs: 0)]),
            steps: [.refund("p", 100, key: "e1"), .refund("p", 5, key: "e2")],
            outcomes: [.overflow, .took(taken: 0, shortfall: 5)],
            lots: ["p": LotEnd(100, 0, 0)], balance: -Int64.max, debt: Int64.max),
        Row(
            name: "floor: a take-back whose unrecovered units would pass 64 bits is refused and changes nothing",
            start: Wallet(
                unrecovered: Int64.max - 5,
                lots: [WalletLot(key: "p", kind: .purchase, amount: 100, spent: 100, addedAtMs: 1)],
                clawbacks: [Clawback(key: "old", creditKey: "q", kind: .refund, requested: Int64.max - 5, unrecovered: Int64.max - 5, atMs: 0)]),
            steps: [.refund("p", 100, key: "e1")],
            outcomes: [.overflow],
            lots: ["p": LotEnd(100, 0, 0)], balance: 0, unrecovered: Int64.max - 5),
        Row(
            name: "a reversal that would raise the balance past 64 bits is refused and changes nothing",
            start: Wallet(
                balance: Int64.max - 10,
                lots: [
                    WalletLot(key: "old", kind: .grant, amount: Int64.max - 10, addedAtMs: 0),
                    WalletLot(key: "p", kind: .purchase, amount: 100, taken: 100, addedAtMs: 1),
                ],
                clawbacks: [Clawback(key: "e1", creditKey: "p", kind: .refund, requested: 100, takes: [share("p", 100)], atMs: 2)]),
            steps: [.reverse("p")],
            outcomes: [.overflow],
            lots: ["old": LotEnd(0, 0, 0), "p": LotEnd(0, 100, 0)], balance: Int64.max - 10),
    ]

    @Test(arguments: rows)
    func row(_ row: Row) {
        var wallet = row.start
        var outcomes: [Outcome] = []
        for step in row.steps {
            switch step {
            case .credit(let key, let amount, let at), .grant(let key, let amount, let at):
                let kind: LotKind = if case .grant = step { .grant } else { .purchase }
                let lot = WalletLot(key: key, kind: kind, amount: amount, addedAtMs: at)
                if let repaid = WalletRules.add(lot, to: &wallet) {
                    outcomes.append(.added(repaid: Dictionary(repaid.map { ($0.clawback, $0.amount) }, uniquingKeysWith: +)))
                } else {
                    outcomes.append(.overflow)
                }
            case .spend(let amount):
                switch WalletRules.spend(amount, from: &wallet) {
                case .success(let shares): outcomes.append(.spent(shares))
                case .failure(let refusal): outcomes.append(.refused(refusal))
                }
            case .refund(let purchase, let units, let key):
                let took = WalletRules.takeBack(
                    units, of: purchase, as: key, kind: .refund, policy: row.policy, atMs: 10, from: &wallet)
                outcomes.append(took.map { .took(taken: $0.taken, shortfall: $0.shortfall) } ?? .overflow)
            case .upgrade(let purchase, let units):
                let took = WalletRules.takeBack(
                    units, of: purchase, as: "upgrade:\(purchase)", kind: .upgrade, policy: row.policy, atMs: 10,
                    from: &wallet)
                outcomes.append(took.map { .took(taken: $0.taken, shortfall: $0.shortfall) } ?? .overflow)
            case .reverse(let purchase):
                guard let reversal = WalletRules.reverseRefunds(of: purchase, in: &wallet) else {
                    outcomes.append(.overflow)
                    break
                }
                outcomes.append(
                    reversal.settlements.isEmpty
                        ? .reversed(
                            restored: reversal.restored, debtCancelled: reversal.debtCancelled,
                            unrecoveredCancelled: reversal.unrecoveredCancelled)
                        : .reversedSettling(
                            restored: reversal.restored, debtCancelled: reversal.debtCancelled,
                            unrecoveredCancelled: reversal.unrecoveredCancelled, settled: reversal.settlements))
            }
            // The one number users read always agrees with the lots and the debt.
            #expect(wallet.balance == wallet.remaining - wallet.debt, "after \(step)")
            #expect(wallet.lots.values.allSatisfy { $0.remaining >= 0 && $0.spent >= 0 && $0.taken >= 0 && $0.covered >= 0 })
        }
        #expect(outcomes == row.outcomes)
        #expect(wallet.lots.mapValues { LotEnd($0.spent, $0.taken, $0.covered) } == row.lots)
        #expect(wallet.balance == row.balance)
        #expect(wallet.debt == row.debt)
        #expect(wallet.unrecovered == row.unrecovered)
        #expect(wallet.clawbacks.values.reduce(0) { $0 + $1.debt } == row.debt)
        #expect(wallet.clawbacks.values.reduce(0) { $0 + $1.unrecovered } == row.unrecovered)
    }
}

extension WalletRulesTests {
    /// Lots holding more than 64 bits in all (possible only with debt outstanding) sum to `Int64.max`, not a trap.
    @Test func remainingPastSixtyFourBitsSaturates() {
        let half = Int64.max / 2 + 1
        let wallet = Wallet(
            balance: Int64.max - 1, debt: 2,
            lots: [
                WalletLot(key: "a", kind: .grant, amount: half, addedAtMs: 0),
                WalletLot(key: "b", kind: .grant, amount: half, addedAtMs: 1),
            ])
        #expect(wallet.remaining == Int64.max)
        #expect(wallet.remaining(.grant) == Int64.max)
        #expect(wallet.remaining(.purchase) == 0)
    }
}

/// Which wallet movement each crediting decision is (`WalletRules.movements`).
@Suite struct WalletMovementTests {
    static let gems = CreditShape.grant(.item(name: "gems", amount: 100))

    static func claim(_ credit: CreditShape = gems) -> LedgerInput {
        .credit(
            CreditClaim(
                source: .result(submissionId: "s"), owner: "u1", productId: "p", credit: credit, quantity: 1,
                expiresDateMs: 30, atMs: 1, purchaseDateMs: 0))
    }

    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        let inputs: [LedgerInput]
        /// The movements of the last input.
        let movements: [WalletMovement]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "a credit adds a lot", inputs: [claim()], movements: [.addPurchase(owner: "u1", item: "gems", amount: 100)]),
        Row(
            name: "a refund takes back", inputs: [claim(), .debit(revocationPercentage: 50_000)],
            movements: [.takeBack(owner: "u1", item: "gems", units: 50, kind: .refund)]),
        Row(
            name: "a signed refund takes back",
            inputs: [claim(), .signed(atMs: 5, .debit(revocationPercentage: nil))],
            movements: [.takeBack(owner: "u1", item: "gems", units: 100, kind: .refund)]),
        Row(
            name: "a reversal of a refund gives back", inputs: [claim(), .debit(revocationPercentage: nil), .recredit],
            movements: [.reverseRefunds(owner: "u1", item: "gems", units: 100)]),
        Row(
            name: "a reversal of a refund that came before the credit credits a lot",
            inputs: [.debit(revocationPercentage: nil), claim(), .recredit],
            movements: [.addPurchase(owner: "u1", item: "gems", amount: 100)]),
        Row(
            name: "a credit after a prorated refund adds the lot, then takes the refund's share",
            inputs: [.debit(revocationPercentage: 30_000), claim()],
            movements: [
                .addPurchase(owner: "u1", item: "gems", amount: 100),
                .takeBack(owner: "u1", item: "gems", units: 30, kind: .refund),
            ]),
        Row(
            name: "an upgrade takes back its unused share", inputs: [claim(), .upgrade(newPurchaseDateMs: 15)],
            movements: [.takeBack(owner: "u1", item: "gems", units: 50, kind: .upgrade)]),
        Row(
            name: "an entitlement moves no units",
            inputs: [claim(.grant(.entitlement(name: "pro"))), .debit(revocationPercentage: nil)], movements: []),
    ]

    @Test(arguments: rows)
    func row(_ row: Row) {
        var state = PurchaseState.unknown
        var movements: [WalletMovement] = []
        for input in row.inputs {
            let decision = CreditingRules.apply(input, to: state, policy: .keep, nowMs: 1)
            movements = WalletRules.movements(for: input, before: state, decision: decision)
            state = decision.state
        }
        #expect(movements == row.movements)
    }
}
