import Dispatch
import Foundation
import Kafka
import ServiceSupport

/// The one `main` of every long-running service (`receipt-ingest`, `receipt-verifier`, `receipt-ledger`): each
/// executable's `main.swift` is one call to `run`. It owns how a process starts and ends; the service only says what
/// it does (`ManagedService`).
///
/// In order: `--help`/`-h` prints `helpText` and exits 0; any other argument is bad usage (exit 2: settings come from
/// the environment); the settings are read (a `ConfigurationError` is logged with its variable, exit 2); the ignored
/// Kubernetes service-link variables are logged once; SIGPIPE is ignored (a client or scraper going away mid-response
/// gives EPIPE, not death); `<prefix>_build_info` and the process metrics are registered, and the allocator's free
/// memory is given back at intervals (`AllocatorTrim`); the service is made and started (a
/// `ServiceStartupError` exits with its status); then, on the first SIGTERM or SIGINT, `drain(within: drainBound)`
/// and exit 0 (a second signal exits 1 at once: `ShutdownSignal`).
public enum ServiceMain {
    public static func run<Settings: ServiceSettings>(
        name: String, settings: Settings.Type, metricsPrefix: String,
        arguments: [String] = Array(CommandLine.arguments.dropFirst()),
        environment: [String: String] = ProcessInfo.processInfo.environment,
        make: (Settings, ServiceContext) throws(ServiceStartupError) -> any ManagedService
    ) -> Never {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(Settings.helpText)
            exit(0)
        }
        let logger = Logger.fromEnvironment(label: name, environment: environment)
        if let unknown = arguments.first {
            logger.error("unknown argument '\(unknown)'; settings come from the environment (see --help)")
            exit(2)
        }
        let settings: Settings
        do {
            settings = try Settings.fromEnvironment(environment)
        } catch {
            logger.error("invalid configuration: \(error.description)", ["variable": .string(error.variable)])
            exit(2)
        }
        settings.kafka.logIgnoredServiceLinks(logger)
        signal(SIGPIPE, SIG_IGN)
        let metrics = MetricsRegistry()
        BuildInfo.register(
            in: metrics, prefix: metricsPrefix, libraries: [("librdkafka_version", KafkaLibrary.version)])
        ProcessMetrics.register(in: metrics)
        let allocatorTrim = AllocatorTrim()

        let service: any ManagedService
        do {
            service = try make(settings, ServiceContext(logger: logger, metrics: metrics))
            try service.start()
        } catch {
            logger.error("cannot start: \(error.description)")
            exit(error.exitStatus)
        }
        let shutdown = ShutdownSignal { signalName in
            logger.info("shutting down", ["signal": .string(signalName)])
            // The service logs "<name> stopped" with what it drained and flushed.
            service.drain(within: service.drainBound)
            exit(0)
        }
        withExtendedLifetime((shutdown, allocatorTrim)) {
            dispatchMain()
        }
    }

    /// For the tools that read Kafka settings and topic names from the environment (`receipt-tail`,
    /// `receipt-replay`, `receipt-notifications-backfill`): the Kafka configuration with its ignored service-link
    /// variables logged, or nil (logged) when `KAFKA_BOOTSTRAP_SERVERS` is missing: exit 2.
    public static func toolKafkaConfiguration(_ environment: [String: String], logger: Logger) -> KafkaConfiguration? {
        let kafka = KafkaConfiguration.fromEnvironment(environment)
        kafka.logIgnoredServiceLinks(logger)
        guard kafka.bootstrapServers != nil else {
            logger.error("KAFKA_BOOTSTRAP_SERVERS is required")
            return nil
        }
        return kafka
    }

    /// `body`'s value, or nil after logging the `ConfigurationError` it threw as every service does (exit 2).
    public static func setting<T>(logger: Logger, _ body: () throws(ConfigurationError) -> T) -> T? {
        do {
            return try body()
        } catch {
            logger.error("invalid configuration: \(error.description)", ["variable": .string(error.variable)])
            return nil
        }
    }
}
