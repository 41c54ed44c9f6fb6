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

    /// Pending requests whose deadline is this close count as near it (the alert's window).
    static let nearDeadlineMs: Int64 = 2 * 3_600_000

    init(registry: MetricsRegistry) {
        let name = "ledger_consumption_requests_total"
        let help = "CONSUMPTION_REQUESTs by what became of them (recorded when the ledger applied the event)"
        recorded = registry.counter(name, help: help, labels: [("outcome", "recorded")])
        answered = registry.counter(name, help: help, labels: [("outcome", "answered")])
        dryRuns = registry.counter(name, help: help, labels: [("outcome", "dry_run")])
        refused = registry.counter(name, help: help, labels: [("outcome", "refused")])
        var unanswered: [ConsumptionRules.UnansweredReason: Counter] = [:]
        for reason in ConsumptionRules.UnansweredReason.allCases {
            unanswered[reason] = registry.counter(
                "ledger_consumption_unanswered_total",
                help: "CONSUMPTION_REQUESTs left unanswered, by reason (deadline_passed: late)",
                labels: [("reason", reason.rawValue)])
        }
        self.unanswered = unanswered
        retries = registry.counter(
            "ledger_consumption_send_retries_total",
            help: "Send Consumption Information calls that failed retryably (429, 5xx, unreachable) and were retried")
        pending = registry.gauge(
            "ledger_consumption_requests_pending", help: "CONSUMPTION_REQUESTs waiting for an answer")
        nearDeadline = registry.gauge(
            "ledger_consumption_requests_near_deadline",
            help: "Pending CONSUMPTION_REQUESTs whose 12-hour deadline is less than 2 hours away")
    }
}
