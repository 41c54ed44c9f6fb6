import LedgerRules
import ServiceSupport

/// What one sweep has done so far: its figures (written to its row), the budget left and the drift found.
struct SweepState {
    let sweepId: Int64
    let startedMs: Int64
    /// Server API calls this sweep may still make (the hourly budget less every sweep's calls of the last hour).
    var budgetLeft: Int64
    var figures = SweepFigures()
    /// Pages committed.
    var pages = 0
    /// Corrections found (recorded, or on a dry run only counted).
    var found = 0
    /// Entries of Apple's histories that did not pass the checks.
    var rejected = 0
    /// Purchases a correction of this sweep already debits (a `REFUND` notification sent again, a refund).
    var explained: Set<String> = []
    /// New drift found by this sweep (drift corrected or recorded by earlier sweeps is not counted again).
    var appleRefundedLedgerCredited: Set<String> = []
    var ledgerDebitedAppleNot: Set<String> = []
    /// Drift ids this sweep recorded as unresolved.
    var unresolved: Set<String> = []
    /// Drift lines logged (bounded: the counts are the figures).
    private var driftLogged = 0

    init(sweepId: Int64, startedMs: Int64, budgetLeft: Int64) {
        self.sweepId = sweepId
        self.startedMs = startedMs
        self.budgetLeft = max(0, budgetLeft)
    }

    mutating func count(calls: Int) {
        budgetLeft -= Int64(calls)
        figures.serverAPICalls += Int64(calls)
    }

    mutating func budgetSpent(_ logger: Logger, _ what: String) {
        guard !figures.budgetExhausted else { return }
        figures.budgetExhausted = true
        logger.info(
            "RECONCILE_MAX_CALLS_PER_HOUR is spent: the rest waits for the next sweep",
            ["before": .string(what), "calls": .int(Int(figures.serverAPICalls))])
    }

    mutating func recordDrift(_ comparison: ReconcileRules.Comparison, logger: Logger) {
        for key in comparison.appleRefundedLedgerCredited where appleRefundedLedgerCredited.insert(key).inserted {
            log(logger, key, "apple_refunded_ledger_credited")
        }
        for key in comparison.ledgerDebitedAppleNot where ledgerDebitedAppleNot.insert(key).inserted {
            log(logger, key, "ledger_debited_apple_not_refunded")
        }
        for drift in comparison.unresolved where unresolved.insert(drift.driftId).inserted {
            logger.warning(
                "drift the sweep cannot correct, recorded once (reconcile_unresolved)",
                [
                    "credit_key": .string(drift.creditKey), "direction": .string(drift.direction.rawValue),
                    "reason": .string(drift.reason.rawValue), "detail": .string(drift.detail),
                ])
        }
        figures.driftAppleRefunded = Int64(appleRefundedLedgerCredited.count)
        figures.driftLedgerDebited = Int64(ledgerDebitedAppleNot.count)
        figures.driftUnresolved = Int64(unresolved.count)
    }

    private mutating func log(_ logger: Logger, _ creditKey: String, _ direction: String) {
        guard driftLogged < 100 else { return }
        driftLogged += 1
        logger.warning("drift", ["credit_key": .string(creditKey), "direction": .string(direction)])
    }

    /// The run's one summary line (JSON), the last line of stdout.
    func summaryLine(environment: String, dryRun: Bool, status: String, error: String?) -> String {
        "{\"summary\":{\"sweep_id\":\(sweepId),\"environment\":\(JSONText.quoted(environment)),\"dry_run\":\(dryRun),"
            + "\"status\":\(JSONText.quoted(status)),\"pages\":\(pages),"
            + "\"server_api_calls\":\(figures.serverAPICalls),\"budget_left\":\(max(0, budgetLeft)),"
            + "\"budget_exhausted\":\(figures.budgetExhausted),\"notifications_read\":\(figures.notificationsRead),"
            + "\"rejected\":\(rejected),\"purchases_checked\":\(figures.purchasesChecked),"
            + "\"purchases_unchecked\":\(figures.purchasesUnchecked),"
            + "\"drift\":{\"apple_refunded_ledger_credited\":\(figures.driftAppleRefunded),"
            + "\"ledger_debited_apple_not_refunded\":\(figures.driftLedgerDebited),"
            + "\"unresolved\":\(figures.driftUnresolved)},"
            + "\"corrections\":{\"found\":\(found),\"recorded\":\(figures.correctionsRecorded),"
            + "\"produced\":\(figures.correctionsProduced)},"
            + "\"error\":\(error.map(JSONText.quoted) ?? "null")}}"
    }
}
