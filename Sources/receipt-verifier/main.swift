// receipt-verifier: the consumer-group worker. `ServiceMain` reads the settings, runs the verifier service, and on
// SIGTERM/SIGINT drains it (stops fetching, finishes or abandons in-flight work within VERIFIER_SHUTDOWN_TIMEOUT_MS,
// stores and commits offsets, closes) and exits 0.

import ServiceRuntime
import Verifier

ServiceMain.run(name: "receipt-verifier", settings: VerifierSettings.self, metricsPrefix: "verifier") {
    settings, context throws(ServiceStartupError) in
    try VerifierService(
        settings: settings, logger: context.logger, metrics: context.metrics, parts: context.parts)
}
