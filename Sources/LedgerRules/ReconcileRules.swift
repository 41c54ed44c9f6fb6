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
    /// earlier sweep's correction) already has its event id. `rescindsConsent`: a `RESCIND_CONSENT` (an `info` event
    /// that moves no money but withdraws consent); the ledger records the ones it applied, so a lost one is sent
    /// again like a money event.
    public static func notificationNeed(kind: LedgerEventKind, rescindsConsent: Bool = false, applied: Bool)
        -> NotificationNeed
    {
        switch kind {
        case .noMoney where rescindsConsent: applied ? .alreadyApplied : .resend
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

    /// What the ledger shows of one purchase.
    public struct LedgerPurchase: Sendable, Equatable {
        public var status: PurchaseStatus
        /// `last_event_signed_ms`: when Apple signed the last money event the ledger applied to it. A debit signed
        /// earlier moves nothing by the crediting rules (`staleEvent`).
        public var lastMoneyEventSignedMs: Int64?

        public init(_ status: PurchaseStatus, lastMoneyEventSignedMs: Int64? = nil) {
            self.status = status
            self.lastMoneyEventSignedMs = lastMoneyEventSignedMs
        }
    }

    /// Where an earlier sweep's correction of a refund stands.
    public enum CorrectionState: Sendable, Equatable {
        /// Recorded at `recordedAtMs` (and produced, or produced by the next sweep); the ledger has not applied its
        /// event yet.
        case recorded(atMs: Int64)
        /// The ledger applied its event (its id is in `applied_events`).
        case applied
    }

    /// Which way Apple and the ledger disagree.
    public enum Direction: String, Sendable, Equatable {
        /// Apple refunded a purchase the ledger still credits.
        case appleRefundedLedgerCredited = "apple_refunded_ledger_credited"
        /// The ledger debited (or refused) a purchase Apple shows not refunded.
        case ledgerDebitedAppleNot = "ledger_debited_apple_not_refunded"
    }

    /// Why a drift cannot be corrected by the sweep.
    public enum UnresolvedReason: String, Sendable, Equatable, CaseIterable {
        /// The ledger applied a money event Apple signed after the refund (a `REFUND_REVERSED`): a debit dated at
        /// the refund is stale by the crediting rules, and Apple's later word stands.
        case laterEventApplied = "later_event_applied"
        /// The correction was recorded long ago (`correctionPatienceMs`) and the ledger never applied it
        /// (dead-lettered, or the ledger is not consuming the events topic).
        case correctionNotApplied = "correction_not_applied"
        /// The ledger applied the correction and the purchase is still credited.
        case correctionMovedNothing = "correction_moved_nothing"
        /// The ledger took back what Apple shows paid: never corrected automatically (a family-shared `REVOKE`, or
        /// a `REFUND_REVERSED` that never arrived); an operator's question.
        case ledgerDebitedAppleNot = "ledger_debited_apple_not_refunded"
    }

    /// A drift the sweep records once, with why it cannot correct it; a later sweep that finds the same drift (the
    /// same `driftId`) reports nothing new.
    public struct Unresolved: Sendable, Equatable {
        /// The refund's correction id (`correctionId`) for Apple's refunds; `ledger-debited:<credit_key>:<last money
        /// event signed ms, or none>` for the reverse (a new money event in the ledger is new evidence).
        public var driftId: String
        public var creditKey: String
        public var direction: Direction
        public var reason: UnresolvedReason
        /// The evidence, for the operator (times, in epoch ms).
        public var detail: String

        public init(driftId: String, creditKey: String, direction: Direction, reason: UnresolvedReason, detail: String) {
            self.driftId = driftId
            self.creditKey = creditKey
            self.direction = direction
            self.reason = reason
            self.detail = detail
        }
    }

    /// How long a recorded correction may wait for the ledger before the sweep records that it was not applied
    /// (the same day a `REFUND` notification sent again is given).
    public static let correctionPatienceMs: Int64 = 86_400_000

    /// The id of a reverse drift: the purchase and the last money event the ledger applied to it (a new one is new
    /// evidence, reported again).
    public static func reverseDriftId(creditKey: String, _ purchase: LedgerPurchase) -> String {
        "ledger-debited:\(creditKey):\(purchase.lastMoneyEventSignedMs.map(String.init) ?? "none")"
    }

    /// What one comparison found.
    public struct Comparison: Sendable, Equatable {
        /// Refunds to produce as `debit` events (Apple refunded, the ledger still credits, nothing explains it).
        public var refundsToCorrect: [AppleRefund] = []
        /// New drift: purchases Apple shows refunded that the ledger shows credited, found by this sweep for the
        /// first time (corrected now, by a made-up debit or a `REFUND` sent again, or recorded in `unresolved`).
        /// A drift an earlier sweep corrected (its correction on its way) or recorded is not reported again.
        public var appleRefundedLedgerCredited: [String] = []
        /// New reverse drift: purchases the ledger shows debited or refused that Apple's refund history does not
        /// show refunded (each also in `unresolved`).
        public var ledgerDebitedAppleNot: [String] = []
        /// The drifts the sweep cannot correct, to record once.
        public var unresolved: [Unresolved] = []

        public init(
            refundsToCorrect: [AppleRefund] = [], appleRefundedLedgerCredited: [String] = [],
            ledgerDebitedAppleNot: [String] = [], unresolved: [Unresolved] = []
        ) {
            self.refundsToCorrect = refundsToCorrect
            self.appleRefundedLedgerCredited = appleRefundedLedgerCredited
            self.ledgerDebitedAppleNot = ledgerDebitedAppleNot
            self.unresolved = unresolved
        }
    }

    /// Compares one customer's refund history with the ledger: each drift it finds is either corrected or recorded
    /// as unresolved with its reason, once; a drift corrected or recorded before is not reported again.
    /// - Parameters:
    ///   - checked: the purchases this lookup checked (their customer's whole refund history was read), with the
    ///     ledger's view of each.
    ///   - refunds: every refunded transaction Apple listed, in Apple's order (ascending revocation).
    ///   - ledger: the ledger's view of each refunded purchase (absent: the ledger does not know it).
    ///   - correctedNow: purchases this sweep already corrects (their `REFUND` notification sent again, whose own
    ///     event debits them, or a debit made up for another of their transactions).
    ///   - resentEarlier: purchases whose `REFUND` notification an earlier sweep sent again within
    ///     `correctionPatienceMs`: on its way, not new.
    ///   - corrections: where earlier corrections stand, by correction id (absent: never made).
    ///   - recordedBefore: the drift ids recorded as unresolved by earlier sweeps.
    ///   - nowMs: the sweep's time.
    public static func compare(
        checked: [String: LedgerPurchase], refunds: [AppleRefund], ledger: [String: LedgerPurchase],
        correctedNow: Set<String> = [], resentEarlier: Set<String> = [], corrections: [String: CorrectionState] = [:],
        recordedBefore: Set<String> = [], nowMs: Int64 = 0
    ) -> Comparison {
        var comparison = Comparison()
        var refunded: Set<String> = []
        for refund in refunds {
            // One purchase refunded under several transactions (a non-consumable's restores): the first, once.
            guard refunded.insert(refund.creditKey).inserted else { continue }
            let purchase = ledger[refund.creditKey] ?? checked[refund.creditKey] ?? LedgerPurchase(.unseen)
            guard purchase.status == .credited || purchase.status == .recredited else { continue }
            let driftId = refund.correctionId
            guard !recordedBefore.contains(driftId) else { continue }
            func unresolved(_ reason: UnresolvedReason, _ detail: String) {
                comparison.appleRefundedLedgerCredited.append(refund.creditKey)
                comparison.unresolved.append(
                    Unresolved(
                        driftId: driftId, creditKey: refund.creditKey, direction: .appleRefundedLedgerCredited,
                        reason: reason, detail: detail))
            }
            if let last = purchase.lastMoneyEventSignedMs, last > refund.revocationDateMs {
                unresolved(
                    .laterEventApplied,
                    "the ledger applied a money event Apple signed at \(last), after this refund's revocation at "
                        + "\(refund.revocationDateMs)")
                continue
            }
            if correctedNow.contains(refund.creditKey) {
                comparison.appleRefundedLedgerCredited.append(refund.creditKey)
                continue
            }
            if resentEarlier.contains(refund.creditKey) { continue }
            switch corrections[driftId] {
            case nil:
                comparison.appleRefundedLedgerCredited.append(refund.creditKey)
                comparison.refundsToCorrect.append(refund)
            case .recorded(let atMs) where nowMs - atMs < correctionPatienceMs:
                continue
            case .recorded(let atMs):
                unresolved(
                    .correctionNotApplied,
                    "the correction recorded at \(atMs) was not applied by the ledger (dead-lettered, or the ledger "
                        + "is not consuming the events topic)")
            case .applied:
                unresolved(.correctionMovedNothing, "the ledger applied the correction and still credits the purchase")
            }
        }
        for (creditKey, purchase) in checked.sorted(by: { $0.key < $1.key })
        where (purchase.status == .debited || purchase.status == .refused) && !refunded.contains(creditKey) {
            let driftId = reverseDriftId(creditKey: creditKey, purchase)
            guard !recordedBefore.contains(driftId) else { continue }
            comparison.ledgerDebitedAppleNot.append(creditKey)
            comparison.unresolved.append(
                Unresolved(
                    driftId: driftId, creditKey: creditKey, direction: .ledgerDebitedAppleNot,
                    reason: .ledgerDebitedAppleNot,
                    detail: "the ledger shows \(purchase.status.rawValue); Apple's refund history shows no refund"))
        }
        return comparison
    }
}
