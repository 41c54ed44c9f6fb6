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
            name: "debited in the ledger, no refund at Apple: reverse drift, no correction",
            checked: ["a": .debited, "b": .credited], refunds: [], expected: R.Comparison(ledgerDebitedAppleNot: ["a"])),
        Row(
            name: "refused in the ledger, no refund at Apple: reverse drift",
            checked: ["a": .refused], expected: R.Comparison(ledgerDebitedAppleNot: ["a"])),
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
                ledgerDebitedAppleNot: ["d"])),
    ]

    @Test(arguments: rows)
    func compare(_ row: Row) {
        #expect(
            R.compare(checked: row.checked, refunds: row.refunds, ledger: row.ledger, explained: row.explained)
                == row.expected)
    }

    static let needs: [(LedgerEventKind, Bool, R.NotificationNeed)] = [
        (.debit, false, .resend),
        (.debit, true, .alreadyApplied),
        (.credit, false, .resend),
        (.recredit, false, .resend),
        (.revoke, false, .resend),
        (.subscriptionStatus, false, .resend),
        (.consumptionRequest, false, .resend),
        (.consumptionRequest, true, .alreadyApplied),
        (.noMoney, false, .movesNothing),
        (.noMoney, true, .movesNothing),
    ]

    @Test(arguments: needs)
    func notificationNeed(kind: LedgerEventKind, applied: Bool, expected: R.NotificationNeed) {
        #expect(R.notificationNeed(kind: kind, applied: applied) == expected)
    }

    @Test func theCorrectionIdIsTheTransactionAndTheRevocation() {
        #expect(Self.refund("a", "2000000000000042", at: 1_767_225_600_000).correctionId
            == "reconcile:refund:2000000000000042:1767225600000")
    }
}
