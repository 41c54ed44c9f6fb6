/// The body Send Consumption Information (v2, App Store Server API 1.19, 2025-12) takes, built by Apple's field rules
/// per product kind, and those rules as a check (docs/CREDITING.md, "What Apple accepts", cites Apple's pages):
///
/// - `customerConsented` (required) must be `true` (`InvalidCustomerConsentedError`); `deliveryStatus` (required) one
///   of five values; `sampleContentProvided` (required) a boolean; `refundPreference` optional, one of three.
/// - `consumptionPercentage` (optional, milliunits 0...100000) only for consumables, non-consumables and non-renewing
///   subscriptions: never for an auto-renewable subscription (`ConsumptionPercentageAutoRenewableSubscriptionError`;
///   Apple computes it from the time elapsed).
/// - When `deliveryStatus` is not `DELIVERED`, `consumptionPercentage` is 0
///   (`UndeliveredConsumptionPercentageNonZeroError`).
/// - `GRANT_PRORATED` for a consumable, a non-consumable or a non-renewing subscription needs a
///   `consumptionPercentage` above 0 and below 100000; for an auto-renewable subscription it goes without one.
///   `GRANT_FULL` and `DECLINE` go with every product kind.
extension ConsumptionRules {
    /// Apple's `consumptionRequestReason` values (App Store Server Notifications: why the customer asked).
    public static let requestReasons = [
        "UNINTENDED_PURCHASE", "FULFILLMENT_ISSUE", "UNSATISFIED_WITH_PURCHASE", "LEGAL", "OTHER",
    ]

    /// One Send Consumption Information body. `customerConsented` is always true: an answer is built only for a
    /// customer who consented (`plan`).
    public struct Body: Sendable, Equatable {
        public var sampleContentProvided: Bool
        public var deliveryStatus: DeliveryStatus
        /// Thousandths of a percent; nil: not sent.
        public var consumptionPercentage: Int64?
        public var refundPreference: RefundPreference?
        /// What Apple's rules are checked against (not sent: Apple knows its transaction); nil when unknown.
        public var productKind: ProductKind?

        public init(
            sampleContentProvided: Bool, deliveryStatus: DeliveryStatus, consumptionPercentage: Int64?,
            refundPreference: RefundPreference?, productKind: ProductKind?
        ) {
            self.sampleContentProvided = sampleContentProvided
            self.deliveryStatus = deliveryStatus
            self.consumptionPercentage = consumptionPercentage
            self.refundPreference = refundPreference
            self.productKind = productKind
        }
    }

    /// The body for `facts` with `preference`. The consumed share is sent only where Apple takes it: for a
    /// consumable, a non-consumable or a non-renewing subscription, 0 when undelivered, the share when delivered
    /// (none when the ledger cannot tell it); never for an auto-renewable subscription, nor for a purchase of
    /// unknown kind (it may be one).
    public static func body(for facts: Facts, preference: RefundPreference?, sampleContentProvided: Bool = false) -> Body {
        var percentage: Int64?
        switch facts.productKind {
        case nil, .autoRenewable?: percentage = nil
        case .consumable?, .nonConsumable?, .nonRenewing?: percentage = facts.isDelivered ? facts.consumedPercentage : 0
        }
        return Body(
            sampleContentProvided: sampleContentProvided, deliveryStatus: facts.deliveryStatus,
            consumptionPercentage: percentage, refundPreference: preference, productKind: facts.productKind)
    }

    /// Why Apple refuses `body` (its documented field rules, above); nil when it accepts it. A body for a purchase
    /// of unknown kind is refused when it would be for any kind.
    public static func refusal(of body: Body) -> String? {
        guard let kind = body.productKind else {
            for kind in ProductKind.allCases {
                var known = body
                known.productKind = kind
                if let why = refusal(of: known) { return "the product type is unknown and \(why)" }
            }
            return nil
        }
        if let percentage = body.consumptionPercentage {
            guard (0...fullConsumption).contains(percentage) else {
                return "consumptionPercentage \(percentage) is outside 0...100000 (ConsumptionPercentageOutOfRangeError)"
            }
            if kind == .autoRenewable {
                return "an auto-renewable subscription takes no consumptionPercentage "
                    + "(ConsumptionPercentageAutoRenewableSubscriptionError)"
            }
            if body.deliveryStatus != .delivered, percentage != 0 {
                return "consumptionPercentage must be 0 when deliveryStatus is \(body.deliveryStatus.rawValue) "
                    + "(UndeliveredConsumptionPercentageNonZeroError)"
            }
        }
        if body.refundPreference == .grantProrated, kind != .autoRenewable {
            guard let percentage = body.consumptionPercentage, percentage > 0, percentage < fullConsumption else {
                let sent = body.consumptionPercentage.map { "\($0)" } ?? "none"
                return "GRANT_PRORATED for a \(kind.rawValue) needs a consumptionPercentage above 0 and below 100000 "
                    + "(sent: \(sent))"
            }
        }
        return nil
    }

    /// All of it consumed, in thousandths of a percent.
    static let fullConsumption: Int64 = 100_000

    /// A case `rule` matches whose body Apple refuses (its preference impossible there), with why; nil when there is
    /// none. What a policy file is checked with at load: every product kind (and unknown), delivered and not,
    /// every consumption that decides (unknown, 0, just above 0, just below and at 100 %, the rule's own bounds and
    /// just past them), every request reason (and none). Refusals depend on the consumption only at unknown, 0 and
    /// 100 %, and a rule's bounds are one interval, so these cases are all there are.
    public static func refusedCase(of rule: PolicyRule) -> (facts: Facts, why: String)? {
        var consumptions: [Int64?] = [nil, 0, 1, fullConsumption - 1, fullConsumption]
        for bound in [rule.consumedAbove, rule.consumedAtMost].compactMap({ $0 }) {
            consumptions += [bound, bound + 1].filter { (0...fullConsumption).contains($0) }.map { Optional($0) }
        }
        let kinds: [ProductKind?] = [.consumable, .nonConsumable, .nonRenewing, .autoRenewable, nil]
        let reasons: [String?] = [nil] + requestReasons + (rule.requestReasons ?? []).sorted()
        for kind in kinds {
            for delivery in [DeliveryStatus.delivered, .undeliveredOther] {
                for consumed in consumptions {
                    for reason in reasons {
                        let facts = Facts(
                            deliveryStatus: delivery, consumedPercentage: consumed, productKind: kind,
                            requestReason: reason)
                        guard rule.matches(facts),
                            let why = refusal(of: body(for: facts, preference: rule.preference))
                        else { continue }
                        return (facts, why)
                    }
                }
            }
        }
        return nil
    }

    /// `facts` in words, for a refused rule's message: "a consumable, delivered, 0 % consumed".
    public static func describe(_ facts: Facts) -> String {
        let kind = facts.productKind.map { "a \($0.rawValue) purchase" } ?? "a purchase of unknown product type"
        let delivery = facts.isDelivered ? "delivered" : "undelivered"
        let consumed = facts.consumedPercentage.map { "\(percentText($0)) % consumed" } ?? "consumption unknown"
        let reason = facts.requestReason.map { ", reason \($0)" } ?? ""
        return "\(kind), \(delivery), \(consumed)\(reason)"
    }

    /// Thousandths of a percent as a percentage: 12345 is "12.345", 50000 is "50".
    static func percentText(_ thousandths: Int64) -> String {
        let whole = thousandths / 1_000
        let fraction = thousandths % 1_000
        guard fraction != 0 else { return "\(whole)" }
        var digits = String(fraction)
        digits = String(repeating: "0", count: 3 - digits.count) + digits
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(whole).\(digits)"
    }
}
