import Dispatch
import Foundation
import Kafka
import ServiceSupport

/// The one `main` of every long-running service (`receipt-ingest`, `receipt-verifier`, `receipt-ledger`): each
/// executable's `main.swift` is one call to `run`. It owns how a process starts and ends; the service only says what
/// it does (`ManagedService`) and registers what it makes (`ServiceParts`).
///
/// In order: `--help`/`-h` prints `helpText` and exits 0; any other argument is bad usage (exit 2: settings come from
/// the environment); the SIGTERM/SIGINT handler is installed (`ShutdownSignal`), before anything is made, so a signal
/// that comes while the service starts is kept and answered once it has started; the settings are read (a
/// `ConfigurationError` is logged with its variable, exit 2); the ignored Kubernetes service-link variables are
/// logged once; SIGPIPE is ignored (a client or scraper going away mid-response gives EPIPE, not death);
/// `<prefix>_build_info` and the process metrics are registered, and the allocator's free memory is given back at
/// intervals (`AllocatorTrim`); the service is made and started (`start(context:make:)`: a `ServiceStartupError`
/// closes the parts made so far and exits with its status); then, on the first SIGTERM or SIGINT,
/// `drain(within: drainBound)` and exit 0 (a second signal exits 1 at once: `ShutdownSignal`).
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
        // The service the handler drains, once it has started; the handler waits for it.
        let started = StartedService()
        let shutdown = ShutdownSignal { signalName in
            logger.info("shutting down", ["signal": .string(signalName)])
            let service = started.wait()
            // The service logs "<name> stopped" with what it drained and flushed.
            service.drain(within: service.drainBound)
            exit(0)
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
            service = try start(context: ServiceContext(logger: logger, metrics: metrics)) { context throws(ServiceStartupError) in
                try make(settings, context)
            }
        } catch {
            logger.error("cannot start: \(error.description)")
            exit(error.exitStatus)
        }
        logger.info(
            "shutdown bound",
            [
                "drain_ms": .int(Int(service.drainBound.clampedMilliseconds)),
                "close_ms": .int(Int(service.parts.bound.clampedMilliseconds)),
            ])
        started.set(service)
        withExtendedLifetime((shutdown, allocatorTrim)) {
            dispatchMain()
        }
    }

    /// Makes the service with `context` and starts it. When either step throws, the parts registered in
    /// `context.parts` so far are closed, last made first, before the error is rethrown: the one place a failed start
    /// is unwound.
    public static func start(
        context: ServiceContext, make: (ServiceContext) throws(ServiceStartupError) -> any ManagedService
    ) throws(ServiceStartupError) -> any ManagedService {
        do {
            let service = try make(context)
            try service.start()
            return service
        } catch {
            context.parts.closeAll()
            throw error
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

    /// The app a tool works on: `--bundle-id` (`option`), else `ALLOWED_BUNDLE_IDS` when it names exactly one app;
    /// nil after logging that `--bundle-id` is required (the tool exits 2).
    public static func toolBundleId(_ option: String?, settings: Settings, logger: Logger) -> String? {
        let allowed = settings.list("ALLOWED_BUNDLE_IDS")
        guard let bundleId = option ?? (allowed.count == 1 ? allowed[0] : nil) else {
            logger.error("--bundle-id is required: ALLOWED_BUNDLE_IDS does not name exactly one app")
            return nil
        }
        return bundleId
    }

    /// A tool's producer (idempotent, acks=all), none for a dry run; nil after logging when it cannot be made (the
    /// tool exits 1).
    public static func toolProducer(_ kafka: KafkaConfiguration, dryRun: Bool, logger: Logger) -> KafkaProducer?? {
        guard !dryRun else { return .some(nil) }
        do {
            return .some(try KafkaProducer(configuration: kafka, logger: logger))
        } catch {
            logger.error("cannot create the Kafka producer", ["error": .string(error.message)])
            return nil
        }
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

/// The service `ServiceMain` started, handed to the shutdown handler, which waits for it: a signal that came while
/// the service was being made is answered once it has started (a start that fails exits instead).
private final class StartedService: Sendable {
    private let service = Locked<(any ManagedService)?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    func set(_ started: any ManagedService) {
        service.withLock { $0 = started }
        ready.signal()
    }

    func wait() -> any ManagedService {
        ready.wait()
        ready.signal()
        return service.withLock { $0 }!
    }
}
