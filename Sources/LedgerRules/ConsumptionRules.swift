/// What the ledger tells Apple when a customer asks for a refund (`CONSUMPTION_REQUEST`, answered with Send
/// Consumption Information v2): the facts come from the purchase's state in the ledger, the refund preference from
/// the deployment's ordered policy rules. Pure: the responder reads the state and sends what this decides.
public enum ConsumptionRules {
    /// Apple's `deliveryStatus` (v2).
    public enum DeliveryStatus: String, Sendable, CaseIterable {
        case delivered = "DELIVERED"
        case undeliveredQualityIssue = "UNDELIVERED_QUALITY_ISSUE"
        case undeliveredWrongItem = "UNDELIVERED_WRONG_ITEM"
        case undeliveredServerOutage = "UNDELIVERED_SERVER_OUTAGE"
        case undeliveredOther = "UNDELIVERED_OTHER"
    }

    /// Apple's `refundPreference` (v2).
    public enum RefundPreference: String, Sendable, CaseIterable {
        case decline = "DECLINE"
        case grantFull = "GRANT_FULL"
        case grantProrated = "GRANT_PRORATED"
    }

    /// What the ledger knows of the purchase, and of the request.
    public struct Facts: Sendable, Equatable {
        public var deliveryStatus: DeliveryStatus
        /// How much of it was consumed, in thousandths of a percent (Apple's `consumptionPercentage`); nil when it
        /// cannot be told (nothing delivered, a purchase for good, a null credit).
        public var consumedPercentage: Int64?
        /// What kind of product it is (`ProductKind.resolved`); nil when unknown. Apple's field rules depend on it.
        public var productKind: ProductKind?
        /// Apple's `consumptionRequestReason` of the request (`requestReasons`, or another value Apple added); nil
        /// when the notification carried none.
        public var requestReason: String?

        public init(
            deliveryStatus: DeliveryStatus, consumedPercentage: Int64?, productKind: ProductKind? = nil,
            requestReason: String? = nil
        ) {
            self.deliveryStatus = deliveryStatus
            self.consumedPercentage = consumedPercentage
            self.productKind = productKind
            self.requestReason = requestReason
        }

        public var isDelivered: Bool { deliveryStatus == .delivered }
    }

    /// The facts of a purchase in `state`.
    /// - Parameters:
    ///   - consumed: units of the purchase the owner used (items only): its lot's `amount_consumed`, spends
    ///     attributed to it first in, first out plus what covered refunds of spent units (`WalletLot.consumed`).
    ///   - nowMs: the time of the request (entitlements: the share of the period elapsed).
    ///
    /// Delivered means the ledger credited it (also when it was taken back since: what Apple asks is whether the
    /// customer got it). Waiting for an owner, refused or never seen is undelivered (`UNDELIVERED_OTHER`). Items:
    /// the share of the credited amount consumed. Entitlements: the share of the period from purchase to expiry
    /// elapsed; one granted for good has no share. The product's kind and the request's reason are the plan's to add
    /// (`plan`: they come from the request as much as from the state).
    public static func facts(of state: PurchaseState, consumed: Int64?, nowMs: Int64) -> Facts {
        switch state.status {
        case .unseen, .pendingOwner, .refused:
            return Facts(deliveryStatus: .undeliveredOther, consumedPercentage: nil)
        case .credited, .recredited, .debited, .upgraded:
            break
        }
        switch state.grant {
        case .item:
            let credited = state.fullAmount
            guard credited > 0, let consumed else { return Facts(deliveryStatus: .delivered, consumedPercentage: nil) }
            return Facts(deliveryStatus: .delivered, consumedPercentage: share(min(max(consumed, 0), credited), of: credited))
        case .entitlement:
            guard let purchased = state.purchaseDateMs, let expires = state.expiresDateMs, expires > purchased else {
                return Facts(deliveryStatus: .delivered, consumedPercentage: nil)
            }
            let elapsed = min(max(nowMs - purchased, 0), expires - purchased)
            return Facts(deliveryStatus: .delivered, consumedPercentage: share(elapsed, of: expires - purchased))
        case nil:
            return Facts(deliveryStatus: .delivered, consumedPercentage: nil)
        }
    }

    /// `part / whole` in thousandths of a percent, rounded half up.
    static func share(_ part: Int64, of whole: Int64) -> Int64 {
        let scaled = Int128(part) * Int128(CreditingRules.fullRevocation) * 2 + Int128(whole)
        return Int64(scaled / (2 * Int128(whole)))
    }

    /// One rule of the deployment's refund policy: when every condition it names holds, it gives `preference`.
    public struct PolicyRule: Sendable, Equatable {
        /// Matches only delivered (true) or only undelivered (false) purchases; nil: either.
        public var delivered: Bool?
        /// Matches when more than this was consumed (thousandths of a percent); an unknown consumption never
        /// matches a bound.
        public var consumedAbove: Int64?
        /// Matches when at most this was consumed.
        public var consumedAtMost: Int64?
        /// Matches only purchases of these kinds (a nil member: of unknown kind); nil: any.
        public var productKinds: Set<ProductKind?>?
        /// Matches only requests with one of these `consumptionRequestReason`s; nil: any (a request without a
        /// reason matches no reason).
        public var requestReasons: Set<String>?
        public var preference: RefundPreference

        public init(
            delivered: Bool? = nil, consumedAbove: Int64? = nil, consumedAtMost: Int64? = nil,
            productKinds: Set<ProductKind?>? = nil, requestReasons: Set<String>? = nil, preference: RefundPreference
        ) {
            self.delivered = delivered
            self.consumedAbove = consumedAbove
            self.consumedAtMost = consumedAtMost
            self.productKinds = productKinds
            self.requestReasons = requestReasons
            self.preference = preference
        }

        func matches(_ facts: Facts) -> Bool {
            if let delivered, delivered != facts.isDelivered { return false }
            if let productKinds, !productKinds.contains(facts.productKind) { return false }
            if let requestReasons {
                guard let reason = facts.requestReason, requestReasons.contains(reason) else { return false }
            }
            if let consumedAbove {
                guard let consumed = facts.consumedPercentage, consumed > consumedAbove else { return false }
            }
            if let consumedAtMost {
                guard let consumed = facts.consumedPercentage, consumed <= consumedAtMost else { return false }
            }
            return true
        }
    }

    /// The first rule that matches, with its position (for the audit record); nil: send no preference. A rule
    /// matches only where Apple accepts its preference (`refusal(of:)`): a `GRANT_PRORATED` rule never matches a
    /// consumable consumed 0 %, say. A policy file cannot hold such a rule (`ConsumptionRules.refusedCase(of:)`
    /// refuses it at load), so this is a guard, never the policy.
    public static func preference(for facts: Facts, rules: [PolicyRule]) -> (rule: Int, preference: RefundPreference)? {
        for (index, rule) in rules.enumerated()
        where rule.matches(facts) && refusal(of: body(for: facts, preference: rule.preference)) == nil {
            return (index, rule.preference)
        }
        return nil
    }
}
