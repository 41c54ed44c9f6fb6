import LedgerRules

/// The rows of `CreditingTable`.
extension CreditingTable {
    static let firstRows: [Row] = [
        Row(
            name: "a verified result credits amount × quantity", inputs: [result("u1", quantity: 3)],
            actions: [.adjustBalance(owner: "u1", item: "gems", delta: 300)], status: .credited, owner: "u1",
            credited: 300),
        Row(
            name: "the same result twice credits once", inputs: [result("u1"), result("u1")],
            actions: [.adjustBalance(owner: "u1", item: "gems", delta: 100)], status: .credited, owner: "u1",
            credited: 100),
        Row(
            name: "a credit event after a result for the same purchase credits nothing more",
            inputs: [result("u1"), creditEvent("u1")],
            actions: [.adjustBalance(owner: "u1", item: "gems", delta: 100)], status: .credited, owner: "u1",
            credited: 100),
        Row(
            name: "a credit event with a known owner credits", inputs: [creditEvent("u1", pro, expires: 9_000)],
            actions: [.grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: 9_000)], status: .credited,
            owner: "u1"),
        Row(
            name: "a subscription entitlement lasts until expires_date_ms, null means for good",
            inputs: [result("u1", pro)],
            actions: [.grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: nil)], status: .credited,
            owner: "u1"),
        Row(
            name: "a debit before the credit is kept and the credit is then refused",
            inputs: [.debit(revocationPercentage: nil), result("u1")],
            actions: [.recordRefusedClaim(userId: "u1", submissionId: "s1", atMs: 1_000)], status: .refused,
            owner: "u1"),
        Row(
            name: "a full refund takes everything back", inputs: [result("u1", quantity: 2), .debit(revocationPercentage: nil)],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 200), .adjustBalance(owner: "u1", item: "gems", delta: -200),
            ], status: .debited, owner: "u1", credited: 200, debited: 200),
        Row(
            name: "a partial refund takes its share, rounded half up to whole units (33.5% of 100 is 34)",
            inputs: [result("u1"), .debit(revocationPercentage: 33_500)],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 100), .adjustBalance(owner: "u1", item: "gems", delta: -34),
            ], status: .debited, owner: "u1", credited: 100, debited: 34),
        Row(
            name: "a partial refund just under half a unit rounds down (33.49% of 100 is 33)",
            inputs: [result("u1"), .debit(revocationPercentage: 33_490)],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 100), .adjustBalance(owner: "u1", item: "gems", delta: -33),
            ], status: .debited, owner: "u1", credited: 100, debited: 33),
        Row(
            name: "a partial refund of several units takes its share of them all (12.5% of 3 × 100 is 37.5: 38)",
            inputs: [result("u1", quantity: 3), .debit(revocationPercentage: 12_500)],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 300), .adjustBalance(owner: "u1", item: "gems", delta: -38),
            ], status: .debited, owner: "u1", credited: 300, debited: 38),
        Row(
            name: "refund, reversal, refund: the second refund is applied, not a duplicate",
            inputs: [result("u1"), .debit(revocationPercentage: nil), .recredit, .debit(revocationPercentage: nil)],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 100), .adjustBalance(owner: "u1", item: "gems", delta: -100),
                .adjustBalance(owner: "u1", item: "gems", delta: 100), .adjustBalance(owner: "u1", item: "gems", delta: -100),
            ], status: .debited, owner: "u1", credited: 200, debited: 200),
        Row(
            name: "a reversal gives back exactly what the partial refund took",
            inputs: [result("u1"), .debit(revocationPercentage: 50_000), .recredit],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 100), .adjustBalance(owner: "u1", item: "gems", delta: -50),
                .adjustBalance(owner: "u1", item: "gems", delta: 50),
            ], status: .recredited, owner: "u1", credited: 150, debited: 50),
        Row(
            name: "a second partial refund takes only what its share adds; never more than was credited",
            inputs: [
                result("u1"), .debit(revocationPercentage: 30_000), .debit(revocationPercentage: 80_000),
                .debit(revocationPercentage: 50_000), .debit(revocationPercentage: 250_000),
            ],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 100), .adjustBalance(owner: "u1", item: "gems", delta: -30),
                .adjustBalance(owner: "u1", item: "gems", delta: -50), .adjustBalance(owner: "u1", item: "gems", delta: -20),
            ], status: .debited, owner: "u1", credited: 100, debited: 100),
        Row(
            name: "a reversal without a refund gives nothing", inputs: [result("u1"), .recredit],
            actions: [.adjustBalance(owner: "u1", item: "gems", delta: 100)], status: .credited, owner: "u1",
            credited: 100),
        Row(
            name: "a refund of an entitlement ends it; its reversal grants it again",
            inputs: [result("u1", pro, expires: 5_000), .debit(revocationPercentage: nil), .recredit],
            actions: [
                .grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: 5_000), .endEntitlement,
                .grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: 5_000),
            ], status: .recredited, owner: "u1"),
        Row(
            name: "a family revoke ends the entitlement and takes no money",
            inputs: [result("u1", pro), .revoke, .revoke],
            actions: [.grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: nil), .endEntitlement],
            status: .debited, owner: "u1"),
        Row(
            name: "a subscription's status moves its entitlement's expiry, and a family revoke then ends it",
            inputs: [result("u1", pro, expires: 1_000), .subscriptionStatus(expiresDateMs: 5_000), .revoke],
            actions: [
                .grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: 1_000),
                .setEntitlementExpiry(expiresDateMs: 5_000), .endEntitlement,
            ], status: .debited, owner: "u1"),
        Row(
            name: "a revoke before the credit refuses it", inputs: [.revoke, result("u1", pro)],
            actions: [.recordRefusedClaim(userId: "u1", submissionId: "s1", atMs: 1_000)], status: .refused,
            owner: "u1"),
        Row(
            name: "subscription_status moves the entitlement's expiry",
            inputs: [
                result("u1", pro, expires: 5_000), .subscriptionStatus(expiresDateMs: 7_000),
                .subscriptionStatus(expiresDateMs: 7_000), .subscriptionStatus(expiresDateMs: nil),
            ],
            actions: [
                .grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: 5_000),
                .setEntitlementExpiry(expiresDateMs: 7_000),
            ], status: .credited, owner: "u1"),
        Row(
            name: "subscription_status of a purchase not credited changes nothing",
            inputs: [.subscriptionStatus(expiresDateMs: 7_000)], actions: [], status: .unseen),
        Row(
            name: "keep: a second user's claim is refused and recorded (again when sent again); nothing is credited twice",
            inputs: [
                result("u1", pro), result("u2", pro, at: 3_000, submission: "s2"),
                result("u2", pro, at: 3_000, submission: "s2"),
            ],
            actions: [
                .grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: nil),
                .recordRefusedClaim(userId: "u2", submissionId: "s2", atMs: 3_000),
                .recordRefusedClaim(userId: "u2", submissionId: "s2", atMs: 3_000),
            ], status: .credited, owner: "u1"),
        Row(
            name: "transfer: an entitlement moves to the latest verified claimant", policy: .transfer,
            inputs: [result("u1", pro, expires: 9_000), result("u2", pro, submission: "s2")],
            actions: [
                .grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: 9_000),
                .grantEntitlement(owner: "u2", entitlement: "pro", expiresDateMs: 9_000),
                .recordTransfer(from: "u1", to: "u2"),
            ], status: .credited, owner: "u2"),
        Row(
            name: "transfer: item amounts never move", policy: .transfer,
            inputs: [result("u1"), result("u2", at: 3_000, submission: "s2")],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 100),
                .recordRefusedClaim(userId: "u2", submissionId: "s2", atMs: 3_000),
            ], status: .credited, owner: "u1", credited: 100),
        Row(
            name: "transfer: a refunded entitlement does not move", policy: .transfer,
            inputs: [result("u1", pro), .debit(revocationPercentage: nil), result("u2", pro, submission: "s2")],
            actions: [
                .grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: nil), .endEntitlement,
                .recordRefusedClaim(userId: "u2", submissionId: "s2", atMs: 1_000),
            ], status: .debited, owner: "u1"),
        Row(
            name: "a credit event whose owner is not known yet waits", inputs: [creditEvent(nil), creditEvent(nil)],
            actions: [.waitForOwner, .waitForOwner], status: .pendingOwner),
        Row(
            name: "a waiting event is applied once a result names the owner (the result credits, the event is then a duplicate)",
            inputs: [creditEvent(nil), result("u1"), creditEvent("u1")],
            actions: [.waitForOwner, .adjustBalance(owner: "u1", item: "gems", delta: 100)], status: .credited,
            owner: "u1", credited: 100),
        Row(
            name: "a waiting event applied with its owner credits", inputs: [creditEvent(nil), creditEvent("u1")],
            actions: [.waitForOwner, .adjustBalance(owner: "u1", item: "gems", delta: 100)], status: .credited,
            owner: "u1", credited: 100),
        Row(
            name: "a refund of a purchase waiting for its owner refuses it", inputs: [creditEvent(nil), .debit(revocationPercentage: nil), creditEvent("u1")],
            actions: [.waitForOwner], status: .refused),
        Row(
            name: "an unknown credit shape is not guessed: unappliable, the purchase stays unknown",
            inputs: [result("u1", .unknown(description: "{\"coins\":5}"))],
            actions: [.unappliable(reason: "unknown credit shape: {\"coins\":5}")], status: .unseen),
        Row(
            name: "a null credit records the owner and grants nothing", inputs: [result("u1", .nothing), .debit(revocationPercentage: nil)],
            actions: [], status: .debited, owner: "u1"),
        Row(
            name: "a non-positive quantity is unappliable", inputs: [result("u1", quantity: 0)],
            actions: [.unappliable(reason: "quantity 0 is not positive")], status: .unseen),
        Row(
            name: "an amount × quantity that overflows is unappliable",
            inputs: [result("u1", .grant(.item(name: "gems", amount: Int64.max / 2)), quantity: 3)],
            actions: [.unappliable(reason: "amount \(Int64.max / 2) × quantity 3 is not a usable amount")], status: .unseen),
        Row(
            name: "a refund reversed before any claim lets the later claim credit",
            inputs: [.debit(revocationPercentage: nil), .recredit, result("u1")],
            actions: [.adjustBalance(owner: "u1", item: "gems", delta: 100)], status: .credited, owner: "u1",
            credited: 100),
        Row(
            name: "a refund reversed after a refused claim credits that claimant",
            inputs: [.debit(revocationPercentage: nil), result("u1", quantity: 2), .recredit],
            actions: [
                .recordRefusedClaim(userId: "u1", submissionId: "s1", atMs: 1_000),
                .adjustBalance(owner: "u1", item: "gems", delta: 200),
            ], status: .recredited, owner: "u1", credited: 200),
    ]

    /// Round 4: sandbox money, Family Sharing, upgrades, Apple's signing order, prorated refunds before the credit.
    static let roundFourRows: [Row] = [
        Row(
            name: "separate: a sandbox purchase is credited by the same rules into the sandbox book",
            inputs: [result("u1", environment: .sandbox)],
            actions: [.adjustBalance(owner: "u1", item: "gems", delta: 100)], status: .credited, owner: "u1",
            credited: 100, book: .sandbox),
        Row(
            name: "separate: a sandbox refund takes back from the sandbox book",
            inputs: [result("u1", environment: .sandbox), .debit(revocationPercentage: nil)],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 100), .adjustBalance(owner: "u1", item: "gems", delta: -100),
            ], status: .debited, owner: "u1", credited: 100, debited: 100, book: .sandbox),
        Row(
            name: "credit: a sandbox purchase is mixed with production (a sandbox-only deployment)", sandbox: .credit,
            inputs: [result("u1", environment: .sandbox)],
            actions: [.adjustBalance(owner: "u1", item: "gems", delta: 100)], status: .credited, owner: "u1",
            credited: 100, book: .production),
        Row(
            name: "ignore: a sandbox purchase is recorded with its owner and grants nothing", sandbox: .ignore,
            inputs: [result("u1", pro, environment: .sandbox), .debit(revocationPercentage: nil)],
            actions: [], status: .debited, owner: "u1"),
        Row(
            name: "ignore: a sandbox purchase of items is recorded with its owner and credits nothing", sandbox: .ignore,
            inputs: [result("u1", environment: .sandbox)], actions: [], status: .credited, owner: "u1"),
        Row(
            name: "ignore: production purchases are credited as always", sandbox: .ignore,
            inputs: [result("u1")], actions: [.adjustBalance(owner: "u1", item: "gems", delta: 100)],
            status: .credited, owner: "u1", credited: 100),
        Row(
            name: "a family-shared purchase of items is declined: someone else paid, the purchase stays unclaimed",
            inputs: [result("u1", ownership: .familyShared)], actions: [.declined(reason: .familySharedItems)],
            status: .unseen),
        Row(
            name: "a family-shared entitlement is granted, and a revoke ends it",
            inputs: [result("u1", pro, ownership: .familyShared), .revoke],
            actions: [.grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: nil), .endEntitlement],
            status: .debited, owner: "u1"),
        Row(
            name: "an upgrade a third into the period takes back the unused two thirds of its items",
            inputs: [period(), .upgrade(newPurchaseDateMs: 10 * day)],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 300), .adjustBalance(owner: "u1", item: "gems", delta: -200),
            ], status: .upgraded, owner: "u1", credited: 300, debited: 200),
        Row(
            name: "the unused share rounds half up (1 of 3 units, half a period left, is 0.5: 1)",
            inputs: [period(.grant(.item(name: "gems", amount: 1))), .upgrade(newPurchaseDateMs: 15 * day)],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 1), .adjustBalance(owner: "u1", item: "gems", delta: -1),
            ], status: .upgraded, owner: "u1", credited: 1, debited: 1),
        Row(
            name: "an upgrade applies once; its entitlement ends at the upgrade",
            inputs: [period(pro), .upgrade(newPurchaseDateMs: 10 * day), .upgrade(newPurchaseDateMs: 12 * day)],
            actions: [.grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: 30 * day), .endEntitlement],
            status: .upgraded, owner: "u1"),
        Row(
            name: "an upgraded period's entitlement is not granted again by a reversal; a reversal of nothing gives nothing",
            inputs: [period(pro), .upgrade(newPurchaseDateMs: 10 * day), .recredit, .debit(revocationPercentage: nil), .recredit],
            actions: [.grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: 30 * day), .endEntitlement],
            status: .recredited, owner: "u1"),
        Row(
            name: "a new period outside the old one's span is no upgrade (a downgrade starts at renewal)",
            inputs: [period(), .upgrade(newPurchaseDateMs: 30 * day)],
            actions: [.adjustBalance(owner: "u1", item: "gems", delta: 300)], status: .credited, owner: "u1",
            credited: 300),
        Row(
            name: "a refund after an upgrade takes only what the upgrade left; its reversal gives back only that",
            inputs: [
                period(), .upgrade(newPurchaseDateMs: 10 * day), .debit(revocationPercentage: nil), .recredit,
                .debit(revocationPercentage: nil),
            ],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 300), .adjustBalance(owner: "u1", item: "gems", delta: -200),
                .adjustBalance(owner: "u1", item: "gems", delta: -100), .adjustBalance(owner: "u1", item: "gems", delta: 100),
                .adjustBalance(owner: "u1", item: "gems", delta: -100),
            ], status: .debited, owner: "u1", credited: 400, debited: 400),
        Row(
            name: "a period is upgraded once: refunded after its upgrade and reversed, the replacement takes nothing again",
            inputs: [
                period(), .upgrade(newPurchaseDateMs: 10 * day), .debit(revocationPercentage: nil), .recredit,
                .upgrade(newPurchaseDateMs: 10 * day),
            ],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 300), .adjustBalance(owner: "u1", item: "gems", delta: -200),
                .adjustBalance(owner: "u1", item: "gems", delta: -100), .adjustBalance(owner: "u1", item: "gems", delta: 100),
            ], status: .recredited, owner: "u1", credited: 400, debited: 300),
        Row(
            name: "a refund signed before the reversal that already arrived moves nothing",
            inputs: [result("u1"), .signed(atMs: 20, .recredit), .signed(atMs: 10, .debit(revocationPercentage: nil))],
            actions: [.adjustBalance(owner: "u1", item: "gems", delta: 100), .staleEvent], status: .credited,
            owner: "u1", credited: 100),
        Row(
            name: "refund then reversal in Apple's order: the credit is given back",
            inputs: [result("u1"), .signed(atMs: 10, .debit(revocationPercentage: nil)), .signed(atMs: 20, .recredit)],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 100), .adjustBalance(owner: "u1", item: "gems", delta: -100),
                .adjustBalance(owner: "u1", item: "gems", delta: 100),
            ], status: .recredited, owner: "u1", credited: 200, debited: 100),
        Row(
            name: "events signed at the same millisecond apply in arrival order",
            inputs: [result("u1"), .signed(atMs: 10, .debit(revocationPercentage: nil)), .signed(atMs: 10, .recredit)],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 100), .adjustBalance(owner: "u1", item: "gems", delta: -100),
                .adjustBalance(owner: "u1", item: "gems", delta: 100),
            ], status: .recredited, owner: "u1", credited: 200, debited: 100),
        Row(
            name: "a prorated refund before the credit: the credit is applied less the refund's share",
            inputs: [.debit(revocationPercentage: 25_000), result("u1", quantity: 2)],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 200), .adjustBalance(owner: "u1", item: "gems", delta: -50),
            ], status: .debited, owner: "u1", credited: 200, debited: 50),
        Row(
            name: "two prorated refunds before the credit: the larger share counts",
            inputs: [.debit(revocationPercentage: 25_000), .debit(revocationPercentage: 40_000), result("u1")],
            actions: [
                .adjustBalance(owner: "u1", item: "gems", delta: 100), .adjustBalance(owner: "u1", item: "gems", delta: -40),
            ], status: .debited, owner: "u1", credited: 100, debited: 40),
        Row(
            name: "a prorated refund then a full one before the credit refuses it",
            inputs: [.debit(revocationPercentage: 25_000), .debit(revocationPercentage: nil), result("u1")],
            actions: [.recordRefusedClaim(userId: "u1", submissionId: "s1", atMs: 1_000)], status: .refused,
            owner: "u1"),
        Row(
            name: "a prorated refund of an entitlement before its credit refuses it (the subscription was revoked)",
            inputs: [.debit(revocationPercentage: 25_000), result("u1", pro)],
            actions: [.recordRefusedClaim(userId: "u1", submissionId: "s1", atMs: 1_000)], status: .refused,
            owner: "u1"),
    ]

    /// Round 5 (issue 41): money events are ordered among money events, `subscription_status` among status events;
    /// a status notification never swallows a refund or its reversal. Every arrival order of a `REFUND` (signed at
    /// 10), its `REFUND_REVERSED` (20) and a status notification signed after both (30), for a month of 300 gems.
    static let refund = LedgerInput.signed(atMs: 10, .debit(revocationPercentage: nil))
    static let reversal = LedgerInput.signed(atMs: 20, .recredit)
    static let laterStatus = LedgerInput.signed(atMs: 30, .subscriptionStatus(expiresDateMs: 40 * day))
    static let gemsCredit = LedgerAction.adjustBalance(owner: "u1", item: "gems", delta: 300)
    static let gemsDebit = LedgerAction.adjustBalance(owner: "u1", item: "gems", delta: -300)

    static let roundFiveRows: [Row] = [
        Row(
            name: "REFUND, REFUND_REVERSED, status: taken back, given back",
            inputs: [period(), refund, reversal, laterStatus], actions: [gemsCredit, gemsDebit, gemsCredit],
            status: .recredited, owner: "u1", credited: 600, debited: 300),
        Row(
            name: "REFUND, status, REFUND_REVERSED: the reversal is not stale behind the status",
            inputs: [period(), refund, laterStatus, reversal], actions: [gemsCredit, gemsDebit, gemsCredit],
            status: .recredited, owner: "u1", credited: 600, debited: 300),
        Row(
            name: "status, REFUND, REFUND_REVERSED: the refund a later status was signed after still takes back",
            inputs: [period(), laterStatus, refund, reversal], actions: [gemsCredit, gemsDebit, gemsCredit],
            status: .recredited, owner: "u1", credited: 600, debited: 300),
        Row(
            name: "status, REFUND, REFUND_REVERSED, an older status: stale among status events, and only there",
            inputs: [period(), laterStatus, refund, reversal, .signed(atMs: 25, .subscriptionStatus(expiresDateMs: 50 * day))],
            actions: [gemsCredit, gemsDebit, gemsCredit, .staleEvent], status: .recredited, owner: "u1", credited: 600,
            debited: 300, lastSigned: (money: 20, status: 30)),
        Row(
            name: "REFUND_REVERSED, REFUND, status: the refund signed before its reversal moves nothing",
            inputs: [period(), reversal, refund, laterStatus], actions: [gemsCredit, .staleEvent],
            status: .credited, owner: "u1", credited: 300),
        Row(
            name: "REFUND_REVERSED, status, REFUND: still stale behind its reversal, not behind the status",
            inputs: [period(), reversal, laterStatus, refund], actions: [gemsCredit, .staleEvent],
            status: .credited, owner: "u1", credited: 300),
        Row(
            name: "status, REFUND_REVERSED, REFUND: the same",
            inputs: [period(), laterStatus, reversal, refund], actions: [gemsCredit, .staleEvent],
            status: .credited, owner: "u1", credited: 300),
        Row(
            name: "a refund alone after a later status: the items are taken back (the issue's case)",
            inputs: [period(), laterStatus, refund], actions: [gemsCredit, gemsDebit], status: .debited,
            owner: "u1", credited: 300, debited: 300),
        Row(
            name: "a status signed before the last money event still moves the expiry (orders are apart)",
            inputs: [
                period(pro), .signed(atMs: 20, .recredit), .signed(atMs: 5, .subscriptionStatus(expiresDateMs: 40 * day)),
            ],
            actions: [
                .grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: 30 * day),
                .setEntitlementExpiry(expiresDateMs: 40 * day),
            ], status: .credited, owner: "u1"),
        Row(
            name: "an older status never overwrites a newer expiry",
            inputs: [
                period(pro), .signed(atMs: 30, .subscriptionStatus(expiresDateMs: 60 * day)),
                .signed(atMs: 20, .subscriptionStatus(expiresDateMs: 40 * day)),
            ],
            actions: [
                .grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: 30 * day),
                .setEntitlementExpiry(expiresDateMs: 60 * day), .staleEvent,
            ], status: .credited, owner: "u1"),
        Row(
            name: "an entitlement: refund after a later status ends it, its reversal grants it again",
            inputs: [period(pro), laterStatus, refund, reversal],
            actions: [
                .grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: 30 * day),
                .setEntitlementExpiry(expiresDateMs: 40 * day), .endEntitlement,
                .grantEntitlement(owner: "u1", entitlement: "pro", expiresDateMs: 40 * day),
            ], status: .recredited, owner: "u1"),
    ]
}
