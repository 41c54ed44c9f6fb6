import Kafka
import ServiceSupport

/// What a long-running service implements; `ServiceMain` owns everything else (help, settings, signals, exit).
///
/// Lifecycle: created by the `make` closure given to `ServiceMain.run` (clients created and registered in
/// `parts` as they are made, nothing runs yet) -> `start()` (binds its endpoint, starts consuming or serving) ->
/// `drain(within:)` on SIGTERM/SIGINT -> the process exits 0. When `make` or `start()` throws, `ServiceMain` closes
/// the parts made so far, last first, and exits with the error's status. `drain` is the one stop verb: it stops
/// taking work, finishes or gives up what the service holds within `bound`, then closes `parts` (last made first,
/// each within its own bound). It is idempotent and blocks for at most about `bound + parts.bound` (what
/// `ServiceMain` logs at start as the shutdown bound).
public protocol ManagedService: AnyObject, Sendable {
    /// Starts serving.
    /// - Throws: `ServiceStartupError` when it cannot (an address in use, a client that cannot be created).
    func start() throws(ServiceStartupError)

    /// Stops taking work, finishes or abandons what is in flight within about `bound`, then closes `parts`.
    /// Idempotent. Returns false when something was abandoned at a bound.
    @discardableResult
    func drain(within bound: Duration) -> Bool

    /// The bound `ServiceMain` passes to `drain(within:)` (the service's own setting: `*_SHUTDOWN_TIMEOUT_MS`, the
    /// ingest's delivery timeout).
    var drainBound: Duration { get }

    /// What the service made that must be closed, in the order it was made (`ServiceContext.parts`).
    var parts: ServiceParts { get }

    /// Alive and ready, or why not; rendered by `HealthEndpoints` for `/healthz` and `/readyz`.
    var health: Health { get }
}

extension ManagedService {
    /// `drain(within: drainBound)`.
    @discardableResult
    public func drain() -> Bool { drain(within: drainBound) }
}

/// The settings of a service `ServiceMain` can run: read from the environment (a `ConfigurationError` is exit 2),
/// described by `helpText` (`--help`), with the Kafka configuration whose ignored service-link variables are logged.
public protocol ServiceSettings: Sendable {
    static func fromEnvironment(_ environment: [String: String]) throws(ConfigurationError) -> Self
    static var helpText: String { get }
    /// The Kafka client settings (`KAFKA_*`); `ServiceMain` logs the Kubernetes service-link variables it ignored.
    var kafka: KafkaConfiguration { get }
}

/// What `ServiceMain` hands the `make` closure: the process's logger, its one metrics registry (which already
/// holds `<prefix>_build_info`) and the parts stack the service registers what it makes in (closed by
/// `ServiceMain` when the start fails, by the service's `drain` when it stops).
public struct ServiceContext: Sendable {
    public let logger: Logger
    public let metrics: MetricsRegistry
    public let parts: ServiceParts

    public init(logger: Logger, metrics: MetricsRegistry, parts: ServiceParts = ServiceParts()) {
        self.logger = logger
        self.metrics = metrics
        self.parts = parts
    }
}

/// Why a service could not be created or started; the message says which setting to look at. `exitStatus` is 2 when
/// the cause is a setting (a librdkafka property it refuses, a file it cannot read), else 1.
public struct ServiceStartupError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public let exitStatus: Int32

    public init(_ description: String, exitStatus: Int32 = 1) {
        self.description = description
        self.exitStatus = exitStatus
    }

    /// A setting the service cannot run with (exit 2, as a `ConfigurationError`).
    public static func settings(_ description: String) -> ServiceStartupError {
        ServiceStartupError(description, exitStatus: 2)
    }
}
