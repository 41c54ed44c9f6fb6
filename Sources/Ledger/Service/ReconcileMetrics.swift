import LedgerRules
import ServiceSupport

/// `receipt-reconcile`'s figures as the ledger exports them (read from the reconcile tables every few seconds; all 0
/// until a sweep recorded something).
struct ReconcileMetrics: Sendable {
    let lastSweepTimestamp: Gauge
    let driftAppleRefunded: Gauge
    let driftLedgerDebited: Gauge
    let uncheckedPurchases: Gauge
    let notificationCorrections: Gauge
    let refundCorrections: Gauge
    let unproducedCorrections: Gauge
    /// `ledger_reconcile_unresolved{reason}`, one per reason the sweep knows.
    let unresolved: [String: Gauge]

    init(registry: MetricsRegistry) {
        lastSweepTimestamp = registry.gauge(
            "ledger_reconcile_last_sweep_timestamp_seconds",
            help: "When the last succeeded receipt-reconcile sweep finished (epoch seconds; 0: none recorded)")
        let drift = "ledger_reconcile_drift"
        let driftHelp = "Purchases the last succeeded sweep found Apple and the ledger disagree on, by direction"
        driftAppleRefunded = registry.gauge(
            drift, help: driftHelp, labels: [("direction", "apple_refunded_ledger_credited")])
        driftLedgerDebited = registry.gauge(
            drift, help: driftHelp, labels: [("direction", "ledger_debited_apple_not_refunded")])
        uncheckedPurchases = registry.gauge(
            "ledger_reconcile_unchecked_purchases",
            help: "Purchases credited within the sweep's window whose refund history no sweep has read yet")
        let corrections = "ledger_reconcile_corrections"
        let correctionsHelp = "Corrections receipt-reconcile recorded (all time), by kind"
        notificationCorrections = registry.gauge(
            corrections, help: correctionsHelp, labels: [("kind", "notification")])
        refundCorrections = registry.gauge(corrections, help: correctionsHelp, labels: [("kind", "refund")])
        unproducedCorrections = registry.gauge(
            "ledger_reconcile_corrections_unproduced",
            help: "Corrections recorded but not acknowledged by Kafka (the next sweep produces them again)")
        unresolved = registry.gauges(
            "ledger_reconcile_unresolved",
            help: "Drifts receipt-reconcile could not correct and recorded once (all time), by reason", label: "reason",
            values: ReconcileRules.UnresolvedReason.allCases.map(\.rawValue))
    }

    func update(_ figures: ReconcileFigures) {
        lastSweepTimestamp.set(Double(figures.lastSweepFinishedMs ?? 0) / 1_000)
        driftAppleRefunded.set(Double(figures.driftAppleRefunded))
        driftLedgerDebited.set(Double(figures.driftLedgerDebited))
        uncheckedPurchases.set(Double(figures.uncheckedPurchases))
        notificationCorrections.set(Double(figures.notificationCorrections))
        refundCorrections.set(Double(figures.refundCorrections))
        unproducedCorrections.set(Double(figures.unproducedCorrections))
        for (reason, gauge) in unresolved { gauge.set(Double(figures.unresolvedByReason[reason] ?? 0)) }
    }
}
