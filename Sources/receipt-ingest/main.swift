// receipt-ingest: the HTTP front door. `ServiceMain` reads the settings, runs the ingest service over a Kafka
// producer, and on SIGTERM/SIGINT drains it (stops accepting, waits for Kafka to acknowledge what it holds,
// flushes) and exits 0.

import Ingest
import ServiceRuntime

ServiceMain.run(name: "receipt-ingest", settings: IngestSettings.self, metricsPrefix: "ingest") {
    settings, context throws(ServiceStartupError) in
    try IngestService.make(
        settings: settings, logger: context.logger, metrics: context.metrics, parts: context.parts)
}
