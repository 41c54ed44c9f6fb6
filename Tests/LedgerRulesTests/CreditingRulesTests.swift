import LedgerRuleTables
import LedgerRules
import Testing

/// The crediting rules as a table (`CreditingTable`, the specification; `CreditingTableStoreTests` runs the same rows
/// through the store): each row starts from a purchase never seen, applies its inputs in order, and states every
/// change the ledger makes and where the purchase ends.
@Suite struct CreditingRulesTests {
    @Test(arguments: CreditingTable.rows)
    func row(_ row: CreditingTable.Row) {
        let steps = CreditingTable.replay(row)
        let state = steps.last?.decision.state ?? .unknown
        #expect(steps.flatMap(\.decision.actions) == row.actions)
        #expect(state.status == row.status)
        #expect(state.owner == row.owner)
        #expect(state.amountCredited == row.credited)
        #expect(state.amountDebited == row.debited)
        #expect(state.book == row.book)
        if let lastSigned = row.lastSigned {
            #expect(state.lastEventSignedMs == lastSigned.money)
            #expect(state.lastStatusSignedMs == lastSigned.status)
        }
    }

    /// When a purchase counts as credited (`creditedAtMs`: reconciliation checks the recently credited ones).
    struct CreditTimeRow: Sendable, CustomTestStringConvertible {
        let name: String
        let before: PurchaseState
        let input: LedgerInput
        let creditedAtMs: Int64?
        var testDescription: String { name }
    }

    static let creditTimeRows: [CreditTimeRow] = {
        let claim = CreditClaim(
            source: .result(submissionId: "s1"), owner: "u1", productId: "gems", credit: .grant(.item(name: "gems", amount: 100)),
            quantity: 1, expiresDateMs: nil, atMs: 1_000)
        var credited = PurchaseState.unknown
        credited.status = .credited
        credited.owner = "u1"
        credited.grant = .item(name: "gems", amount: 100)
        credited.amountCredited = 100
        var creditedLongAgo = credited
        creditedLongAgo.creditedAtMs = 500
        var debitedWithoutTime = credited
        debitedWithoutTime.status = .debited
        debitedWithoutTime.amountDebited = 100
        var debitedWithTime = debitedWithoutTime
        debitedWithTime.creditedAtMs = 500
        return [
            CreditTimeRow(name: "a first credit: the claim's time", before: .unknown, input: .credit(claim), creditedAtMs: 1_000),
            CreditTimeRow(
                name: "a recredit of a purchase credited before credit times were kept: the time it is applied",
                before: debitedWithoutTime, input: .recredit, creditedAtMs: 9_000),
            CreditTimeRow(
                name: "a recredit keeps the first credit's time", before: debitedWithTime, input: .recredit,
                creditedAtMs: 500),
            CreditTimeRow(
                name: "a debit of a purchase credited long ago keeps its time", before: creditedLongAgo,
                input: .debit(revocationPercentage: nil), creditedAtMs: 500),
            CreditTimeRow(
                name: "a debit of one without a time sets none (debited is not credited)", before: credited,
                input: .debit(revocationPercentage: nil), creditedAtMs: nil),
            CreditTimeRow(
                name: "a claim that waits for its owner is not credited", before: .unknown,
                input: .credit(CreditClaim(
                    source: .event(eventId: "e1"), owner: nil, productId: "gems", credit: claim.credit, quantity: 1,
                    expiresDateMs: nil, atMs: 1_000)),
                creditedAtMs: nil),
        ]
    }()

    @Test(arguments: creditTimeRows) func creditTime(_ row: CreditTimeRow) {
        let decision = CreditingRules.apply(row.input, to: row.before, policy: .keep, nowMs: 9_000)
        #expect(decision.state.creditedAtMs == row.creditedAtMs)
    }

    @Test func theUnusedShareOfAnUpgradedPeriod() {
        #expect(CreditingRules.unusedShare(of: 300, purchaseDateMs: 0, expiresDateMs: 30, upgradedAtMs: 10) == 200)
        #expect(CreditingRules.unusedShare(of: 100, purchaseDateMs: 0, expiresDateMs: 3, upgradedAtMs: 1) == 67)
        #expect(CreditingRules.unusedShare(of: 100, purchaseDateMs: 0, expiresDateMs: 8, upgradedAtMs: 7) == 13)
        #expect(CreditingRules.unusedShare(of: 100, purchaseDateMs: 0, expiresDateMs: 30, upgradedAtMs: 40) == 0)
        #expect(CreditingRules.unusedShare(of: 100, purchaseDateMs: 10, expiresDateMs: 10, upgradedAtMs: 10) == 0)
        #expect(CreditingRules.unusedShare(of: Int64.max, purchaseDateMs: 0, expiresDateMs: 2, upgradedAtMs: 0) == Int64.max)
    }

    @Test func shareRoundsHalfUpToWholeUnits() {
        #expect(CreditingRules.share(of: 100, revocationPercentage: nil) == 100)
        #expect(CreditingRules.share(of: 100, revocationPercentage: 50_000) == 50)
        #expect(CreditingRules.share(of: 1, revocationPercentage: 50_000) == 1)
        #expect(CreditingRules.share(of: 1, revocationPercentage: 49_999) == 0)
        #expect(CreditingRules.share(of: 3, revocationPercentage: 50_000) == 2)
        #expect(CreditingRules.share(of: 100, revocationPercentage: -5) == 0)
        #expect(CreditingRules.share(of: 100, revocationPercentage: 200_000) == 100)
        #expect(CreditingRules.share(of: Int64.max, revocationPercentage: 100_000) == Int64.max)
    }
}
