/// Reconciliation (`receipt-reconcile`): what Apple says happened against what the ledger shows, decided without
/// I/O. The sweep reads Apple's Get Notification History and Get Refund History and the ledger's tables; these rules
/// say which corrections to produce (each once, under a deterministic event id the ledger dedupes on) and what
/// drift to report.
public enum ReconcileRules {
    /// A notification in Apple's history, verified, as the ledger would receive it.
    public enum NotificationNeed: Sendable, Equatable {
        /// The ledger never applied it: put Apple's `signedPayload` on the notifications topic again.
        case resend
        /// The ledger applied it (or recorded it), or a correction for it is already recorded.
        case alreadyApplied
        /// Its event moves no money and records nothing (`test`, `info`): nothing to correct.
        case movesNothing
    }

    /// Whether the notification whose event is of `kind` must be sent again; `applied` says the ledger (or an
    /// earlier sweep's correction) already has its event id.
    public static func notificationNeed(kind: LedgerEventKind, applied: Bool) -> NotificationNeed {
        switch kind {
        case .noMoney: .movesNothing
        case .credit, .debit, .recredit, .revoke, .subscriptionStatus, .consumptionRequest:
            applied ? .alreadyApplied : .resend
        }
    }

    /// A refunded transaction in Get Refund History (its signature verified), keyed by the purchase it belongs to.
    public struct AppleRefund: Sendable, Equatable {
        public var creditKey: String
        public var transactionId: String
        /// Apple's `revocationDate`: the debit's `signed_date_ms`, so the ledger orders it as Apple's `REFUND`.
        public var revocationDateMs: Int64

        public init(creditKey: String, transactionId: String, revocationDateMs: Int64) {
            self.creditKey = creditKey
            self.transactionId = transactionId
            self.revocationDateMs = revocationDateMs
        }

        /// The correction's event id: the same refund always gets the same id, so the ledger applies it once
        /// however often it is produced.
        public var correctionId: String { "reconcile:refund:\(transactionId):\(revocationDateMs)" }
    }

    /// What one comparison found.
    public struct Comparison: Sendable, Equatable {
        /// Refunds to produce as `debit` events (Apple refunded, the ledger still credits, nothing explains it).
        public var refundsToCorrect: [AppleRefund] = []
        /// Purchases Apple shows refunded that the ledger shows credited (corrected or being corrected).
        public var appleRefundedLedgerCredited: [String] = []
        /// Purchases the ledger shows debited or refused that Apple's refund history does not show refunded.
        public var ledgerDebitedAppleNot: [String] = []

        public init(
            refundsToCorrect: [AppleRefund] = [], appleRefundedLedgerCredited: [String] = [],
            ledgerDebitedAppleNot: [String] = []
        ) {
            self.refundsToCorrect = refundsToCorrect
            self.appleRefundedLedgerCredited = appleRefundedLedgerCredited
            self.ledgerDebitedAppleNot = ledgerDebitedAppleNot
        }
    }

    /// Compares one customer's refund history with the ledger.
    /// - Parameters:
    ///   - checked: the purchases this lookup checked (their customer's whole refund history was read), with the
    ///     ledger's status of each.
    ///   - refunds: every refunded transaction Apple listed, in Apple's order (ascending revocation).
    ///   - ledger: the ledger's status of each refunded purchase (absent: the ledger does not know it).
    ///   - explained: purchases whose `REFUND` notification this sweep is sending again (or sent before): its own
    ///     event will debit them, so no second debit is made up.
    public static func compare(
        checked: [String: PurchaseStatus], refunds: [AppleRefund], ledger: [String: PurchaseStatus],
        explained: Set<String>
    ) -> Comparison {
        var comparison = Comparison()
        var refunded: Set<String> = []
        for refund in refunds {
            // One purchase refunded under several transactions (a non-consumable's restores): the first, once.
            guard refunded.insert(refund.creditKey).inserted else { continue }
            let status = ledger[refund.creditKey] ?? checked[refund.creditKey] ?? PurchaseStatus.none
            guard status == .credited || status == .recredited else { continue }
            comparison.appleRefundedLedgerCredited.append(refund.creditKey)
            if !explained.contains(refund.creditKey) { comparison.refundsToCorrect.append(refund) }
        }
        for (creditKey, status) in checked.sorted(by: { $0.key < $1.key })
        where (status == .debited || status == .refused) && !refunded.contains(creditKey) {
            comparison.ledgerDebitedAppleNot.append(creditKey)
        }
        return comparison
    }
}
