// receipt-verifier: the consumer-group worker. Reads its settings, runs the verifier service, and on SIGTERM/SIGINT
// drains (stops fetching, finishes or abandons in-flight work within VERIFIER_SHUTDOWN_TIMEOUT_MS, stores and
// commits offsets, closes) and exits 0.

import Dispatch
import Foundation
import ServiceSupport
import Verifier

enum ReceiptVerifierMain {
    static func run(arguments: [String], environment: [String: String]) -> Never {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(VerifierSettings.helpText)
            exit(0)
        }
        let logger = Logger.fromEnvironment(label: "receipt-verifier", environment: environment)
        if let unknown = arguments.first {
            logger.error("unknown argument '\(unknown)'; settings come from the environment (see --help)")
            exit(2)
        }
        let settings: VerifierSettings
        do {
            settings = try VerifierSettings.fromEnvironment(environment)
        } catch {
            logger.error("invalid configuration: \(error.description)", ["variable": .string(error.variable)])
            exit(2)
        }
        // A scraper that goes away mid-response must give EPIPE, not kill the process.
        signal(SIGPIPE, SIG_IGN)

        let service: VerifierService
        do {
            service = try VerifierService(settings: settings, logger: logger)
            try service.start()
        } catch {
            logger.error("cannot start: \(error.description)")
            exit(1)
        }

        let shutdown = ShutdownSignal { signalName in
            logger.info("shutting down", ["signal": .string(signalName)])
            service.shutdown()
            exit(0)
        }
        withExtendedLifetime(shutdown) {
            dispatchMain()
        }
    }
}

ReceiptVerifierMain.run(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
