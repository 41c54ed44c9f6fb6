import LedgerRules
import ServiceSupport

/// The refund responder's metrics.
struct ConsumptionMetrics: Sendable {
    let recorded: Counter
    let answered: Counter
    let dryRuns: Counter
    let refused: Counter
    let retries: Counter
    /// Unanswered by reason, `deadline_passed` (late) among them.
    let unanswered: [ConsumptionRules.UnansweredReason: Counter]
    let pending: Gauge
    let nearDeadline: Gauge
    /// Answers Apple refused, by its `errorCode` (`refusalLabel`).
    let refusedByCode: [String: Counter]

    /// Apple's error codes an answer can be refused with (its Send Consumption Information page and libraries;
    /// docs/CREDITING.md, "What Apple accepts"), each a label value of its own: the metric's series stay few
    /// whatever Apple answers. Any other code is `other`; an answer without one (Apple's malformed-request 400)
    /// `none`.
    static let refusalCodes: [Int] = [
        4_000_000, 4_000_006, 4_000_035, 4_000_036, 4_000_041, 4_000_044, 4_000_047, 4_000_048, 4_000_185,
        4_000_209, 4_040_010,
    ]

    /// The `error_code` label of a refusal with Apple's `errorCode`.
    static func refusalLabel(_ errorCode: Int?) -> String {
        guard let errorCode else { return "none" }
        return refusalCodes.contains(errorCode) ? String(errorCode) : "other"
    }

    /// Pending requests whose deadline is this close count as near it (the alert's window).
    static let nearDeadlineMs: Int64 = 2 * 3_600_000

    init(registry: MetricsRegistry) {
        let name = "ledger_consumption_requests_total"
        let help = "CONSUMPTION_REQUESTs by what became of them (recorded when the ledger applied the event)"
        recorded = registry.counter(name, help: help, labels: [("outcome", "recorded")])
        answered = registry.counter(name, help: help, labels: [("outcome", "answered")])
        dryRuns = registry.counter(name, help: help, labels: [("outcome", "dry_run")])
        refused = registry.counter(name, help: help, labels: [("outcome", "refused")])
        unanswered = registry.counters(
            "ledger_consumption_unanswered_total",
            help: "CONSUMPTION_REQUESTs left unanswered, by reason (deadline_passed: late)", label: "reason",
            values: ConsumptionRules.UnansweredReason.allCases)
        retries = registry.counter(
            "ledger_consumption_send_retries_total",
            help: "Send Consumption Information calls that failed retryably (429, 5xx, unreachable) and were retried")
        refusedByCode = registry.counters(
            "ledger_consumption_answers_refused_total",
            help: "Send Consumption Information answers Apple refused (a 4xx other than 401/429, not retried), by "
                + "Apple's errorCode (other: a code not listed, none: no code)",
            label: "error_code", values: Self.refusalCodes.map(String.init) + ["other", "none"])
        pending = registry.gauge(
            "ledger_consumption_requests_pending", help: "CONSUMPTION_REQUESTs waiting for an answer")
        nearDeadline = registry.gauge(
            "ledger_consumption_requests_near_deadline",
            help: "Pending CONSUMPTION_REQUESTs whose 12-hour deadline is less than 2 hours away")
    }
}
