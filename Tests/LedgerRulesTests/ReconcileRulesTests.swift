import LedgerRules
import Testing

/// Reconciliation as tables: Apple's refund history and the ledger's statuses in, corrections and drift out; and
/// which of Apple's notifications are sent again.
@Suite struct ReconcileRulesTests {
    typealias R = ReconcileRules

    static func refund(_ key: String, _ transaction: String = "", at: Int64 = 5_000) -> R.AppleRefund {
        R.AppleRefund(creditKey: key, transactionId: transaction.isEmpty ? key + "-t" : transaction, revocationDateMs: at)
    }

    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        var checked: [String: PurchaseStatus] = [:]
        var refunds: [R.AppleRefund] = []
        var ledger: [String: PurchaseStatus] = [:]
        var explained: Set<String> = []
        let expected: R.Comparison
        var testDescription: String { name }
    }

    /// The reverse drift of `key` as the rules record it (the ledger's last money event unknown: `none`).
    static func reverse(_ key: String, _ status: PurchaseStatus, lastMoney: Int64? = nil) -> R.Unresolved {
        R.Unresolved(
            driftId: R.reverseDriftId(creditKey: key, R.LedgerPurchase(status, lastMoneyEventSignedMs: lastMoney)),
            creditKey: key, direction: .ledgerDebitedAppleNot, reason: .ledgerDebitedAppleNot,
            detail: "the ledger shows \(status.rawValue); Apple's refund history shows no refund")
    }

    static let rows: [Row] = [
        Row(
            name: "refunded at Apple, credited in the ledger, no notification: one debit, drift",
            checked: ["a": .credited], refunds: [refund("a")], ledger: ["a": .credited],
            expected: R.Comparison(refundsToCorrect: [refund("a")], appleRefundedLedgerCredited: ["a"])),
        Row(
            name: "recredited (a reversal) and refunded again at Apple: a debit",
            checked: ["a": .recredited], refunds: [refund("a")], ledger: ["a": .recredited],
            expected: R.Comparison(refundsToCorrect: [refund("a")], appleRefundedLedgerCredited: ["a"])),
        Row(
            name: "the REFUND notification is being sent again: drift, but no made-up debit",
            checked: ["a": .credited], refunds: [refund("a")], ledger: ["a": .credited], explained: ["a"],
            expected: R.Comparison(appleRefundedLedgerCredited: ["a"])),
        Row(
            name: "the ledger already debited it: nothing",
            checked: ["a": .debited], refunds: [refund("a")], ledger: ["a": .debited], expected: R.Comparison()),
        Row(
            name: "refused (refunded before the credit) and Apple agrees: nothing",
            checked: ["a": .refused], refunds: [refund("a")], ledger: ["a": .refused], expected: R.Comparison()),
        Row(
            name: "debited in the ledger, no refund at Apple: reverse drift, recorded as not corrected",
            checked: ["a": .debited, "b": .credited], refunds: [],
            expected: R.Comparison(ledgerDebitedAppleNot: ["a"], unresolved: [reverse("a", .debited)])),
        Row(
            name: "refused in the ledger, no refund at Apple: reverse drift",
            checked: ["a": .refused],
            expected: R.Comparison(ledgerDebitedAppleNot: ["a"], unresolved: [reverse("a", .refused)])),
        Row(
            name: "credited everywhere: nothing",
            checked: ["a": .credited, "b": .recredited], expected: R.Comparison()),
        Row(
            name: "upgraded away (not a refund) and no refund at Apple: nothing",
            checked: ["a": .upgraded], expected: R.Comparison()),
        Row(
            name: "a refund of another purchase of the customer, credited in the ledger: corrected too",
            checked: ["a": .credited], refunds: [refund("b")], ledger: ["b": .credited],
            expected: R.Comparison(refundsToCorrect: [refund("b")], appleRefundedLedgerCredited: ["b"])),
        Row(
            name: "a refund of a purchase the ledger does not know (or waits for its owner): nothing",
            checked: ["a": .credited], refunds: [refund("b"), refund("c")], ledger: ["c": .pendingOwner],
            expected: R.Comparison()),
        Row(
            name: "one purchase refunded under two transactions: the first refund only",
            checked: ["a": .credited], refunds: [refund("a", "t1", at: 5_000), refund("a", "t2", at: 6_000)],
            ledger: ["a": .credited],
            expected: R.Comparison(
                refundsToCorrect: [refund("a", "t1", at: 5_000)], appleRefundedLedgerCredited: ["a"])),
        Row(
            name: "mixed: one to correct, one explained, one reverse drift, in key order",
            checked: ["a": .credited, "d": .debited, "e": .refused],
            refunds: [refund("a"), refund("b"), refund("e")], ledger: ["a": .credited, "b": .credited, "e": .refused],
            explained: ["b"],
            expected: R.Comparison(
                refundsToCorrect: [refund("a")], appleRefundedLedgerCredited: ["a", "b"],
                ledgerDebitedAppleNot: ["d"], unresolved: [reverse("d", .debited)])),
    ]

    @Test(arguments: rows)
    func compare(_ row: Row) {
        #expect(
            R.compare(
                checked: row.checked.mapValues { R.LedgerPurchase($0) }, refunds: row.refunds,
                ledger: row.ledger.mapValues { R.LedgerPurchase($0) }, correctedNow: row.explained)
                == row.expected)
    }

    /// Convergence (issue 41): every drift is corrected or recorded as unresolved with its reason, once; what an
    /// earlier sweep corrected or recorded is not reported again. One refund of `a` revoked at 5,000; the sweep
    /// runs at `now`.
    struct ConvergenceRow: CustomTestStringConvertible, Sendable {
        let name: String
        var ledger: R.LedgerPurchase
        var resentEarlier: Set<String> = []
        var correction: R.CorrectionState?
        var recordedBefore: Set<String> = []
        let expected: R.Comparison
        var testDescription: String { name }
    }

    static let now: Int64 = 10 * R.correctionPatienceMs

    static func unresolved(_ reason: R.UnresolvedReason, _ detail: String) -> R.Unresolved {
        R.Unresolved(
            driftId: refund("a").correctionId, creditKey: "a", direction: .appleRefundedLedgerCredited, reason: reason,
            detail: detail)
    }

    static let convergenceRows: [ConvergenceRow] = [
        ConvergenceRow(
            name: "a status notification signed after the refund does not stand in the way: the debit is made up",
            ledger: R.LedgerPurchase(.credited, lastMoneyEventSignedMs: nil),
            expected: R.Comparison(refundsToCorrect: [refund("a")], appleRefundedLedgerCredited: ["a"])),
        ConvergenceRow(
            name: "a money event signed before the refund: the debit is made up (it is not stale)",
            ledger: R.LedgerPurchase(.recredited, lastMoneyEventSignedMs: 4_000),
            expected: R.Comparison(refundsToCorrect: [refund("a")], appleRefundedLedgerCredited: ["a"])),
        ConvergenceRow(
            name: "a money event signed at the refund's millisecond: the debit still applies (arrival order)",
            ledger: R.LedgerPurchase(.credited, lastMoneyEventSignedMs: 5_000),
            expected: R.Comparison(refundsToCorrect: [refund("a")], appleRefundedLedgerCredited: ["a"])),
        ConvergenceRow(
            name: "a REFUND_REVERSED signed after the refund was applied: no stale debit, recorded why, once",
            ledger: R.LedgerPurchase(.recredited, lastMoneyEventSignedMs: 7_000),
            expected: R.Comparison(
                appleRefundedLedgerCredited: ["a"],
                unresolved: [
                    unresolved(
                        .laterEventApplied,
                        "the ledger applied a money event Apple signed at 7000, after this refund's revocation at 5000")
                ])),
        ConvergenceRow(
            name: "the same drift recorded by an earlier sweep: nothing new",
            ledger: R.LedgerPurchase(.recredited, lastMoneyEventSignedMs: 7_000),
            recordedBefore: [refund("a").correctionId], expected: R.Comparison()),
        ConvergenceRow(
            name: "an earlier sweep's correction on its way to the ledger: not reported again",
            ledger: R.LedgerPurchase(.credited), correction: .recorded(atMs: now - 60_000), expected: R.Comparison()),
        ConvergenceRow(
            name: "a correction the ledger has not applied for a day: recorded why, once",
            ledger: R.LedgerPurchase(.credited), correction: .recorded(atMs: now - R.correctionPatienceMs),
            expected: R.Comparison(
                appleRefundedLedgerCredited: ["a"],
                unresolved: [
                    unresolved(
                        .correctionNotApplied,
                        "the correction recorded at \(now - R.correctionPatienceMs) was not applied by the ledger "
                            + "(dead-lettered, or the ledger is not consuming the events topic)")
                ])),
        ConvergenceRow(
            name: "a correction the ledger applied that left the purchase credited: recorded why, once",
            ledger: R.LedgerPurchase(.credited, lastMoneyEventSignedMs: 5_000), correction: .applied,
            expected: R.Comparison(
                appleRefundedLedgerCredited: ["a"],
                unresolved: [
                    unresolved(
                        .correctionMovedNothing, "the ledger applied the correction and still credits the purchase")
                ])),
        ConvergenceRow(
            name: "a REFUND notification an earlier sweep sent again (within the day): on its way, not reported",
            ledger: R.LedgerPurchase(.credited), resentEarlier: ["a"], expected: R.Comparison()),
        ConvergenceRow(
            name: "the corrected purchase is debited now: no drift",
            ledger: R.LedgerPurchase(.debited, lastMoneyEventSignedMs: 5_000), correction: .applied,
            expected: R.Comparison()),
        ConvergenceRow(
            name: "a reverse drift recorded before (the ledger's last money event unchanged): nothing new",
            ledger: R.LedgerPurchase(.credited),
            recordedBefore: [R.reverseDriftId(creditKey: "b", R.LedgerPurchase(.debited, lastMoneyEventSignedMs: 3_000))],
            expected: R.Comparison()),
    ]

    @Test(arguments: convergenceRows)
    func converges(_ row: ConvergenceRow) {
        let isReverseRow = row.recordedBefore.contains { $0.hasPrefix("ledger-debited:") }
        // The reverse-drift row checks `b`, debited in the ledger, whose customer's history shows only `a`'s refund.
        let checked: [String: R.LedgerPurchase] =
            isReverseRow ? ["a": row.ledger, "b": R.LedgerPurchase(.debited, lastMoneyEventSignedMs: 3_000)] : ["a": row.ledger]
        let comparison = R.compare(
            checked: checked, refunds: isReverseRow ? [] : [Self.refund("a")], ledger: ["a": row.ledger],
            resentEarlier: row.resentEarlier,
            corrections: row.correction.map { [Self.refund("a").correctionId: $0] } ?? [:],
            recordedBefore: row.recordedBefore, nowMs: Self.now)
        #expect(comparison == row.expected)
    }

    static let needs: [(LedgerEventKind, Bool, Bool, R.NotificationNeed)] = [
        (.debit, false, false, .resend),
        (.debit, false, true, .alreadyApplied),
        (.credit, false, false, .resend),
        (.recredit, false, false, .resend),
        (.revoke, false, false, .resend),
        (.subscriptionStatus, false, false, .resend),
        (.consumptionRequest, false, false, .resend),
        (.consumptionRequest, false, true, .alreadyApplied),
        (.noMoney, false, false, .movesNothing),
        (.noMoney, false, true, .movesNothing),
        // RESCIND_CONSENT moves no money, but withdraws consent: a lost one is sent again (issue 41).
        (.noMoney, true, false, .resend),
        (.noMoney, true, true, .alreadyApplied),
    ]

    @Test(arguments: needs)
    func notificationNeed(kind: LedgerEventKind, rescindsConsent: Bool, applied: Bool, expected: R.NotificationNeed) {
        #expect(R.notificationNeed(kind: kind, rescindsConsent: rescindsConsent, applied: applied) == expected)
    }

    @Test func theCorrectionIdIsTheTransactionAndTheRevocation() {
        #expect(Self.refund("a", "2000000000000042", at: 1_767_225_600_000).correctionId
            == "reconcile:refund:2000000000000042:1767225600000")
    }
}
