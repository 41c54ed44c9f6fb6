// receipt-ledger: applies results and purchase events to PostgreSQL exactly once and serves what users own.
// `ServiceMain` reads the settings, runs the ledger service, and on SIGTERM/SIGINT lets the batch being applied
// commit, leaves the consumer group and exits 0.

import Ledger
import ServiceRuntime

ServiceMain.run(name: "receipt-ledger", settings: LedgerSettings.self, metricsPrefix: "ledger") {
    settings, context throws(ServiceStartupError) in
    try LedgerService(
        settings: settings, logger: context.logger, metrics: context.metrics, parts: context.parts)
}
