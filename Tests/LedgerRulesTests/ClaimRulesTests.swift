import LedgerRules
import Testing

/// The decisions the store once made itself, as tables: which results and transactions claim a credit, what a claim
/// leaves its claimant (a refusal recorded, the links the credit makes), when a decision may have made a period
/// replace another, Apple's `is_upgraded` mark, what a take-back does to a balance, and which states count as
/// credited once.
@Suite struct ClaimRulesTests {
    @Test(arguments: [
        ("verified", true), ("rejected", false), ("failed", false), ("Verified", false), ("", false),
        ("verified_later", false),
    ])
    func onlyAVerifiedResultClaims(outcome: String, claims: Bool) {
        #expect(CreditingRules.claims(outcome: outcome) == claims, "\(outcome)")
    }

    @Test(arguments: [
        (true, nil, true), (true, false, true), (true, true, false), (false, nil, false), (false, false, false),
        (false, true, false),
    ] as [(Bool, Bool?, Bool)])
    func aTransactionIsClaimedWhenCreditableAndNotUpgradedAway(creditable: Bool, isUpgraded: Bool?, claims: Bool) {
        #expect(CreditingRules.claims(creditable: creditable, isUpgraded: isUpgraded) == claims)
    }

    struct ClaimantRow: CustomTestStringConvertible, Sendable {
        let name: String
        var refused = false
        var status = PurchaseStatus.credited
        var purchaseOwner: String? = "u1"
        var isPeriod = false
        var originalAwaited = false
        let recorded: Bool
        let linksToken: Bool
        let linksOriginal: Bool
        var testDescription: String { name }
    }

    static let claimantRows: [ClaimantRow] = [
        ClaimantRow(
            name: "the owner of a one-off purchase links its token, not its original id",
            recorded: false, linksToken: true, linksOriginal: false),
        ClaimantRow(
            name: "the owner of a subscription period links both (its renewals are found by the id)", isPeriod: true,
            recorded: false, linksToken: true, linksOriginal: true),
        ClaimantRow(
            name: "the owner of a one-off purchase whose id a claim waits for links both", originalAwaited: true,
            recorded: false, linksToken: true, linksOriginal: true),
        ClaimantRow(
            name: "a claimant refused for someone else's token is recorded and links nothing", refused: true,
            purchaseOwner: "u2", isPeriod: true, originalAwaited: true, recorded: true, linksToken: false,
            linksOriginal: false),
        ClaimantRow(
            name: "a refused claimant of a purchase the ledger does not hold (declined, unappliable): nothing",
            refused: true, status: .unseen, purchaseOwner: nil, recorded: false, linksToken: false,
            linksOriginal: false),
        ClaimantRow(
            name: "a refused claimant of a refused purchase is recorded", refused: true, status: .refused,
            purchaseOwner: "u2", recorded: true, linksToken: false, linksOriginal: false),
        ClaimantRow(
            name: "a second claimant under keep (the rules record the refusal) links nothing", purchaseOwner: "u2",
            isPeriod: true, recorded: false, linksToken: false, linksOriginal: false),
        ClaimantRow(
            name: "a claim that waits for its owner links nothing", status: .pendingOwner, purchaseOwner: nil,
            isPeriod: true, recorded: false, linksToken: false, linksOriginal: false),
    ]

    @Test(arguments: claimantRows)
    func whatAClaimLeavesItsClaimant(_ row: ClaimantRow) {
        let owner = OwnerRules.Owner(
            user: row.refused ? "u2" : "u1", basis: row.refused ? .linkedToken : .claimant,
            claimantRefused: row.refused)
        var asked = false
        let left = OwnerRules.claimant(
            "u1", of: owner, purchaseStatus: row.status, purchaseOwner: row.purchaseOwner, isPeriod: row.isPeriod,
            originalAwaited: { asked = true; return row.originalAwaited }())
        #expect(left.recordedAsRefused == row.recorded)
        #expect(left.linksToken == row.linksToken)
        #expect(left.linksOriginalTransactionId == row.linksOriginal)
        #expect(!asked || (row.purchaseOwner == "u1" && !row.isPeriod), "the awaited ids are read only when they decide")
    }

    static func state(_ status: PurchaseStatus, reported: Bool = false) -> PurchaseState {
        PurchaseState(status: status, owner: status == .unseen ? nil : "u1", upgradeReported: reported)
    }

    @Test(arguments: [
        // A period newly in force may replace another; one already in force only with a notification.
        (true, PurchaseStatus.unseen, PurchaseStatus.credited, false, true),
        (true, .pendingOwner, .credited, false, true),
        (true, .debited, .recredited, false, true),
        (true, .credited, .credited, false, false),
        (true, .credited, .credited, true, true),
        (true, .credited, .debited, true, false),
        (true, .unseen, .refused, true, false),
        (true, .unseen, .pendingOwner, true, false),
        // A consumable or a non-consumable replaces nothing.
        (false, .unseen, .credited, true, false),
    ] as [(Bool, PurchaseStatus, PurchaseStatus, Bool, Bool)])
    func aDecisionMayMakeAPeriodReplaceAnother(
        isPeriod: Bool, before: PurchaseStatus, after: PurchaseStatus, notified: Bool, mayReplace: Bool
    ) {
        #expect(
            UpgradeRule.mayReplace(
                isPeriod: isPeriod, before: Self.state(before), after: Self.state(after), upgradeNotified: notified)
                == mayReplace)
    }

    @Test func isUpgradedIsRememberedOnceOnAPurchaseTheLedgerHolds() {
        #expect(UpgradeRule.markingReported(Self.state(.unseen)) == nil, "nothing to remember it on")
        #expect(UpgradeRule.markingReported(Self.state(.credited, reported: true)) == nil, "marked already")
        for status in PurchaseStatus.allCases where status != .unseen {
            #expect(UpgradeRule.markingReported(Self.state(status)) == Self.state(status, reported: true), "\(status)")
        }
    }

    @Test func aTakeBackLowersTheBalanceByTheShortfallOnlyUnderDebt() {
        let partly = WalletRules.TakeBack(taken: 30, shortfall: 70)
        #expect(partly.balanceChange(under: .floor) == -30)
        #expect(partly.balanceChange(under: .debt) == -100)
        let whole = WalletRules.TakeBack(taken: 100, shortfall: 0)
        #expect(whole.balanceChange(under: .floor) == -100 && whole.balanceChange(under: .debt) == -100)
    }

    @Test(arguments: PurchaseStatus.allCases)
    func creditedOnceIsEveryStateAfterACredit(_ status: PurchaseStatus) {
        let neverCredited: Set<PurchaseStatus> = [.unseen, .pendingOwner, .refused]
        #expect(Self.state(status).isCreditedOnce == !neverCredited.contains(status))
    }
}
