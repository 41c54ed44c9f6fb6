import ServiceSupport

/// What the refund responder does with one recorded `CONSUMPTION_REQUEST` now: the order of the checks is the rule.
extension ConsumptionRules {
    /// `LEDGER_CONSUMPTION_RESPONSES`.
    public enum Mode: String, Sendable, CaseIterable {
        /// Every request is recorded as unanswered (`responder_off`): nothing is computed or sent.
        case off
        /// The answer is computed and recorded as what would be sent; nothing is sent.
        case dryRun = "dry-run"
        /// The answer is sent to Apple.
        case send
    }

    /// Why a request gets no answer.
    public enum UnansweredReason: String, Sendable, CaseIterable {
        case responderOff = "responder_off"
        /// Apple's 12 hours passed before an answer could be sent (counted late).
        case deadlinePassed = "deadline_passed"
        /// The request's transaction is family-shared: Send Consumption Information refuses every answer for one
        /// (`FamilyTransactionNotSupportedError`, 4000185), whatever the facts.
        case familyShared = "family_shared"
        /// The ledger knows no owner of the purchase, so no one can have consented.
        case noOwner = "no_owner"
        /// The owner has not consented (or withdrew): Apple takes `customerConsented` true only.
        case noConsent = "no_consent"
    }

    /// The answer to send (or, on a dry run, to record).
    public struct Answer: Sendable, Equatable {
        public var facts: Facts
        /// The position of the policy rule that gave the preference; nil when none matched.
        public var rule: Int?
        public var preference: RefundPreference?
        public var sampleContentProvided: Bool

        public init(facts: Facts, rule: Int?, preference: RefundPreference?, sampleContentProvided: Bool) {
            self.facts = facts
            self.rule = rule
            self.preference = preference
            self.sampleContentProvided = sampleContentProvided
        }

        /// What is sent: the facts by Apple's field rules for the product's kind (`ConsumptionRules.body`).
        public var body: Body {
            ConsumptionRules.body(for: facts, preference: preference, sampleContentProvided: sampleContentProvided)
        }
    }

    /// What the recorded `CONSUMPTION_REQUEST` says of itself.
    public struct Request: Sendable, Equatable {
        /// The `product_type` its transaction named (Apple's `type`, as signed); nil when it named none.
        public var productKind: ProductKind?
        /// Apple's `consumptionRequestReason`; nil when the notification carried none.
        public var reason: String?
        /// The purchase's key is a subscription period's (`ProductKind.resolved`).
        public var isSubscriptionPeriod: Bool
        /// Who paid, as the request's transaction says (`in_app_ownership_type`); `.purchased` when it said nothing
        /// (requests recorded before schema version 9: then Apple's 4000185 is what tells).
        public var ownership: Ownership

        public init(
            productKind: ProductKind? = nil, reason: String? = nil, isSubscriptionPeriod: Bool = false,
            ownership: Ownership = .purchased
        ) {
            self.productKind = productKind
            self.reason = reason
            self.isSubscriptionPeriod = isSubscriptionPeriod
            self.ownership = ownership
        }
    }

    public enum Plan: Sendable, Equatable {
        case unanswered(UnansweredReason)
        case send(Answer)
        case dryRun(Answer)
    }

    /// The deployment's refund policy (`LEDGER_CONSUMPTION_POLICY_FILE`).
    public struct Policy: Sendable, Equatable {
        public var rules: [PolicyRule]
        /// Apple's `sampleContentProvided`: the app offers a free sample or trial of its content.
        public var sampleContentProvided: Bool

        public init(rules: [PolicyRule] = [], sampleContentProvided: Bool = false) {
            self.rules = rules
            self.sampleContentProvided = sampleContentProvided
        }
    }

    /// - Parameters:
    ///   - consumed: units of the purchase consumed (items; `facts(of:consumed:nowMs:)`).
    ///   - consented: the owner's consent as recorded (nil: never asked).
    ///   - deadlineMs: Apple's deadline (12 hours after it signed the request).
    ///   - request: what the request says of itself: the product's kind (which decides the body's fields), why
    ///     the customer asked (which rules may condition on) and who paid (a family-shared transaction is never
    ///     answered).
    public static func plan(
        mode: Mode, nowMs: Int64, deadlineMs: Int64, state: PurchaseState, consumed: Int64?, consented: Bool?,
        policy: Policy, request: Request = Request()
    ) -> Plan {
        if mode == .off { return .unanswered(.responderOff) }
        // Before the deadline: a request no answer can ever satisfy is not a late one.
        if request.ownership == .familyShared { return .unanswered(.familyShared) }
        if nowMs >= deadlineMs { return .unanswered(.deadlinePassed) }
        guard state.owner != nil else { return .unanswered(.noOwner) }
        guard consented == true else { return .unanswered(.noConsent) }
        var facts = facts(of: state, consumed: consumed, nowMs: nowMs)
        facts.productKind = ProductKind.resolved(
            named: request.productKind, recorded: state.productKind, isSubscriptionPeriod: request.isSubscriptionPeriod)
        facts.requestReason = request.reason
        let chosen = preference(for: facts, rules: policy.rules)
        let answer = Answer(
            facts: facts, rule: chosen?.rule, preference: chosen?.preference,
            sampleContentProvided: policy.sampleContentProvided)
        return mode == .dryRun ? .dryRun(answer) : .send(answer)
    }

    /// Apple waits 12 hours for an answer.
    public static let answerWindowMs: Int64 = 12 * 3_600_000

    /// When the next try after `attempts` failed ones (Apple busy, rate-limited, unreachable) may start: doubling
    /// from `baseMs`, at most an hour apart, never after the deadline (a last try just before it instead), nil when
    /// the deadline leaves no time.
    public static func retryAtMs(attempts: Int, nowMs: Int64, deadlineMs: Int64, baseMs: Int64) -> Int64? {
        let backoff = Backoff(initial: .milliseconds(baseMs), maximum: .seconds(3600))
        let delay = Int64(backoff.wait(afterFailures: attempts) / .milliseconds(1))
        let lastChance = deadlineMs - 1
        guard nowMs < lastChance else { return nil }
        return min(nowMs + delay, lastChance)
    }
}
