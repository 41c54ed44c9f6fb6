// receipt-ledger: applies results and purchase events to PostgreSQL exactly once and serves what users own. Reads
// its settings, runs the ledger service, and on SIGTERM/SIGINT lets the batch being applied commit, leaves the
// consumer group and exits 0.

import Dispatch
import Foundation
import Ledger
import ServiceSupport

enum ReceiptLedgerMain {
    static func run(arguments: [String], environment: [String: String]) -> Never {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(LedgerSettings.helpText)
            exit(0)
        }
        let logger = Logger.fromEnvironment(label: "receipt-ledger", environment: environment)
        if let unknown = arguments.first {
            logger.error("unknown argument '\(unknown)'; settings come from the environment (see --help)")
            exit(2)
        }
        let settings: LedgerSettings
        do {
            settings = try LedgerSettings.fromEnvironment(environment)
        } catch {
            logger.error("invalid configuration: \(error.description)", ["variable": .string(error.variable)])
            exit(2)
        }
        signal(SIGPIPE, SIG_IGN)
        let service: LedgerService
        do {
            service = try LedgerService(settings: settings, logger: logger)
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

ReceiptLedgerMain.run(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
