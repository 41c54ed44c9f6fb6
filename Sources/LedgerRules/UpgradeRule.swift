/// Which credited subscription period an upgrade replaced. Apple credits the new period of an upgrade at once and
/// refunds the unused part of the replaced one without a refund notification, so without this rule the replaced
/// period keeps its items (a month of coins paid 1.5 times; alternate downgrade and upgrade to farm it).
///
/// A credited period `old` was replaced by a credited period `new` when they are periods of the same subscription
/// (`original_transaction_id`) and of different products, `new` was bought strictly inside `old`'s span
/// (`old.purchase < new.purchase < old.expires`), and Apple gave evidence of an upgrade: the `new` period came with
/// a `DID_CHANGE_RENEWAL_PREF`/`UPGRADE` (or `OFFER_REDEEMED`/`UPGRADE`) notification, or Apple marked `old`
/// `is_upgraded`. Then `old` takes `CreditingRules.upgrade(newPurchaseDateMs:)`.
public enum UpgradeRule {
    /// One subscription period as the rule compares it.
    public struct Period: Sendable, Equatable {
        public var creditKey: String
        public var originalTransactionId: String
        public var productId: String
        public var purchaseDateMs: Int64
        public var expiresDateMs: Int64
        /// Credited and nothing taken back since.
        public var inForce: Bool
        /// Apple marked it `is_upgraded`.
        public var upgradeReported: Bool

        public init(
            creditKey: String, originalTransactionId: String, productId: String, purchaseDateMs: Int64,
            expiresDateMs: Int64, inForce: Bool, upgradeReported: Bool
        ) {
            self.creditKey = creditKey
            self.originalTransactionId = originalTransactionId
            self.productId = productId
            self.purchaseDateMs = purchaseDateMs
            self.expiresDateMs = expiresDateMs
            self.inForce = inForce
            self.upgradeReported = upgradeReported
        }

        /// `other` was bought inside this period's span, for another product of the same subscription.
        func isOverlapped(by other: Period) -> Bool {
            other.creditKey != creditKey && other.originalTransactionId == originalTransactionId
                && other.productId != productId && purchaseDateMs < other.purchaseDateMs
                && other.purchaseDateMs < expiresDateMs
        }
    }

    /// The pairs (replaced period, the new period's purchase date) to apply, given the periods in force of one
    /// subscription and whether the newest credit came with an upgrade notification.
    /// - Parameters:
    ///   - periods: the subscription's credited periods (any order).
    ///   - upgradeNotified: credit keys whose credit came with an `UPGRADE` notification.
    public static func replacements(among periods: [Period], upgradeNotified: Set<String>) -> [(
        creditKey: String, newPurchaseDateMs: Int64
    )] {
        var found: [(creditKey: String, newPurchaseDateMs: Int64)] = []
        for old in periods where old.inForce {
            // The earliest replacement is the upgrade; later overlapping periods are further changes of the same
            // span, and the old period is taken back once.
            let replacement = periods.filter { new in
                new.inForce && old.isOverlapped(by: new)
                    && (old.upgradeReported || upgradeNotified.contains(new.creditKey))
            }.min { $0.purchaseDateMs < $1.purchaseDateMs }
            if let replacement { found.append((old.creditKey, replacement.purchaseDateMs)) }
        }
        return found.sorted { $0.creditKey < $1.creditKey }
    }

    /// Whether a decision that took a purchase from `before` to `after` may have made it replace another period of
    /// its subscription, so that `replacements` is asked: a period newly in force, or one credited again with an
    /// upgrade notification (the evidence may come after the credit).
    @inlinable
    public static func mayReplace(isPeriod: Bool, before: PurchaseState, after: PurchaseState, upgradeNotified: Bool)
        -> Bool
    {
        isPeriod && after.isInForce && (!before.isInForce || upgradeNotified)
    }

    /// `state` with Apple's `is_upgraded` mark remembered (evidence for a replacement credited later); nil when the
    /// mark changes nothing: a purchase the ledger never saw, or one marked already.
    public static func markingReported(_ state: PurchaseState) -> PurchaseState? {
        guard state.status != .unseen, !state.upgradeReported else { return nil }
        var marked = state
        marked.upgradeReported = true
        return marked
    }
}
