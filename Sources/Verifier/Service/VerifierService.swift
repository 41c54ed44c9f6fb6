import AppStore
import AppStoreServerAPI
import Catalog
import Dispatch
import HTTPServer
import Kafka
import Notifications
import ServiceRuntime
import ServiceSupport
import SignedData
import Synchronization

/// The receipt verifier as a service: a Kafka consumer (RECEIPTS_TOPIC, RETRY_TOPIC and NOTIFICATIONS_TOPIC, group
/// VERIFIER_GROUP_ID) feeding the `VerificationEngine`, the App Store client, the notification verifier (anchored to
/// APPLE_ROOT_CERTIFICATES), an idempotent producer for outputs, and the health/metrics endpoint.
///
/// A `ManagedService`: `init` creates the clients (nothing runs yet), each registered in `parts` as it is made,
/// `start` binds the endpoint and starts consuming, `drain(within:)` drains (pause, finish or abandon in-flight work
/// within the bound, offsets stored as outputs are acknowledged) and then closes the parts, last made first: the
/// probe ticker, the consumer (commits stored offsets, leaves the group), the App Store and OCSP clients, the
/// catalog's watch, the producer (flushed, then closed) and last the endpoint, which serves `/readyz` ("draining")
/// and `/metrics` to the end. `drain` is idempotent.
public final class VerifierService: ManagedService {
    private let settings: VerifierSettings
    private let logger: Logger
    let metrics: MetricsRegistry
    private let engine: VerificationEngine
    private let consumer: KafkaConsumer
    /// `PRODUCT_CATALOG_FILE`, followed (re-read within a second of a change) until shutdown.
    private let catalog: ProductCatalogFile?
    private let server: HTTPServer
    /// What `/healthz` and `/readyz` answer (`health(link:engine:consumer:producer:)` once everything is made).
    private let currentHealth: DeferredHealth
    private let ticker: RepeatingTicker
    public let parts: ServiceParts
    private let drainOnce = DrainOnce()

    /// - Parameters:
    ///   - metrics: the process's registry (`ServiceMain` registers `verifier_build_info` in it).
    ///   - parts: where what `init` makes is registered, to be closed by `drain` or, when `init` throws, by the
    ///     caller (`ServiceMain.start`).
    public init(
        settings: VerifierSettings, logger: Logger, metrics: MetricsRegistry = MetricsRegistry(),
        parts: ServiceParts = ServiceParts()
    ) throws(ServiceStartupError) {
        self.settings = settings
        self.logger = logger
        self.metrics = metrics
        self.parts = parts
        // The endpoint first, so it closes last: it answers /readyz and /metrics until everything else is closed.
        let health = DeferredHealth()
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(
                listen: settings.metricsListen, threadCount: 1, connectionLimit: 256),
            handler: HealthHandler(endpoints: HealthEndpoints(registry: metrics) { health.current }),
            logger: logger.named("verifier-http"))
        parts.add("health and metrics endpoint") { server.close() }
        for property in settings.overriddenConsumerProperties {
            logger.warning(
                "KAFKA_* setting ignored for the consumer: auto-commit commits stored offsets on revoke and close",
                ["setting": .string(property)])
        }
        let producer = try parts.makeProducer(
            configuration: settings.kafka, logger: logger, metrics: metrics, closeBound: .seconds(2))
        // Closed just before the producer: what the drain left (records of abandoned work) gets this long to reach
        // Kafka.
        parts.add("Kafka producer flush", bound: .seconds(5)) { producer.flush(timeout: $0) }
        var catalog: ProductCatalogFile?
        if let path = settings.appStore.productCatalogFile {
            do {
                catalog = try ProductCatalogFile(path: path, logger: logger.named("product-catalog"), metrics: metrics)
            } catch {
                throw .settings("invalid configuration: \(error.description)")
            }
        }
        if let catalog { parts.add("product catalog watch") { catalog.stopWatching() } }
        // One revocation checker (one OCSP cache) for every signed-data verifier of the process.
        let revocationClient: RevocationClient
        do {
            revocationClient = try RevocationClient(
                settings: settings.revocation, trustedRoots: settings.serverAPI.rootCertificates,
                caBundlePath: settings.appStore.caBundlePath, logger: logger.named("ocsp"), metrics: metrics)
        } catch {
            throw ServiceStartupError("cannot create the OCSP client: \(error)")
        }
        parts.add("OCSP client") { revocationClient.close() }
        let revocation = revocationClient.checker
        // The Server API backend's verifier (signed transactions, Apple's signed answers).
        let submissionSignedData = AppleSignedDataVerifier(
            trustedRoots: settings.serverAPI.rootCertificates, revocation: revocation)
        let appleVerifier: ReceiptVerifier
        do {
            appleVerifier = try ReceiptVerifier.make(
                settings: settings.appStore, serverAPI: settings.serverAPI, catalog: catalog,
                logger: logger.named("appstore"), metrics: metrics, signedData: submissionSignedData)
        } catch {
            throw ServiceStartupError("cannot create the App Store client: \(error)")
        }
        // Rounds still at Apple when it closes end then, without a verdict; the drain gave their partitions up, so
        // they write nothing (their messages are read again after the restart).
        parts.add("App Store client") { appleVerifier.close() }
        // The notifications' own verifier (its chain and header caches), anchored to APPLE_ROOT_CERTIFICATES.
        let signedData = AppleSignedDataVerifier(
            trustedRoots: settings.serverAPI.rootCertificates, revocation: revocation)
        CertificateExpiryMetrics.register(
            in: metrics, roots: settings.serverAPI.rootCertificates,
            chainsInUse: { signedData.chainsInUse + submissionSignedData.chainsInUse })
        // The consumer first (the link is its delegate; the handlers come once the engine exists, before the
        // consumer starts), so the engine drives the consumer itself, not through the link.
        let link = ConsumerLink(service: "verifier", logger: logger)
        let consumer: KafkaConsumer
        do {
            consumer = try KafkaConsumer(
                configuration: settings.consumerKafka, groupId: settings.groupId,
                topics: [settings.topics.receipts, settings.topics.retry, settings.topics.notifications],
                delegate: link, logger: logger,
                metrics: metrics, commitInterval: settings.commitInterval)
        } catch {
            throw .settings("cannot create the Kafka consumer: \(error.message)")
        }
        parts.add("Kafka consumer", bound: .seconds(10), closing: consumer)
        let engine = VerificationEngine(
            configuration: VerificationEngine.Configuration(
                topics: settings.topics, limits: settings.limits, retryPolicy: settings.retryPolicy,
                breaker: settings.breaker),
            verifier: AppStoreSubmissionVerifier(verifier: appleVerifier, roundDeadline: settings.roundDeadline),
            publisher: KafkaRecordPublisher(producer: producer), control: consumer,
            clock: DispatchClock(queue: DispatchQueue(label: "verifier-timers")),
            logger: logger, metrics: VerifierMetrics(registry: metrics),
            notifications: NotificationProcessor(
                verifier: signedData, policy: settings.notificationPolicy, catalog: catalog))
        let revokeTimeout = settings.revokeTimeout
        link.attach(
            handlers: ConsumerLink.Handlers(
                received: { engine.consume($0) },
                assigned: { engine.partitionsAssigned($0) },
                revoking: { engine.partitionsRevoking($0, timeout: revokeTimeout) }))
        link.attach(consumer: consumer)
        let ticker = RepeatingTicker(interval: .milliseconds(250)) { engine.tick() }
        parts.add("probe ticker") { ticker.close() }
        health.attach { Self.health(link: link, engine: engine, consumer: consumer, producer: producer) }
        self.catalog = catalog
        self.consumer = consumer
        self.engine = engine
        self.ticker = ticker
        self.server = server
        self.currentHealth = health
        registerGauges(engine: engine)
    }

    /// The bound port of the health/metrics endpoint (useful with port 0).
    var metricsPort: UInt16 { server.port }

    /// Alive unless the consumer reported a fatal error or the engine is stuck; ready once connected, while
    /// publishing works and until draining starts.
    static func health(
        link: ConsumerLink, engine: VerificationEngine, consumer: KafkaConsumer, producer: KafkaProducer
    ) -> Health {
        if let fatal = link.liveness { return .unhealthy(fatal) }
        var health = Health(liveness: engine.livenessProblem)
        if engine.snapshot.stopping {
            health.readiness = "draining"
        } else if let publishing = engine.publishingProblem {
            health.readiness = publishing
        } else if !consumer.isConnected {
            health.readiness = "the consumer is not connected to Kafka"
        } else if !producer.isConnected {
            health.readiness = "the producer is not connected to Kafka"
        }
        return health
    }

    public var health: Health { currentHealth.current }

    /// `VERIFIER_SHUTDOWN_TIMEOUT_MS`.
    public var drainBound: Duration { settings.shutdownTimeout }

    /// Binds the endpoint, starts the probe ticker and starts consuming.
    /// - Throws: `ServiceStartupError` when the endpoint cannot be bound.
    public func start() throws(ServiceStartupError) {
        try server.start(listening: "VERIFIER_METRICS_LISTEN", settings.metricsListen)
        ticker.start()
        catalog?.startWatching()
        consumer.start()
        logger.info(
            "receipt-verifier started",
            [
                "group_id": .string(settings.groupId), "receipts_topic": .string(settings.topics.receipts),
                "retry_topic": .string(settings.topics.retry),
                "notifications_topic": .string(settings.topics.notifications),
                "events_topic": .string(settings.topics.events), "max_in_flight": .int(settings.limits.maxInFlight),
                "metrics_port": .int(Int(server.port)), "apple": .string(settings.appStore.description),
                "server_api": .string(settings.serverAPI.description),
                "revocation": .string(settings.revocation.description),
            ])
    }

    /// Drains the engine within `bound`, then closes the parts (see the type's documentation). Blocks for at most
    /// about `bound + parts.bound`.
    @discardableResult
    public func drain(within bound: Duration) -> Bool {
        guard drainOnce.claim() else { return true }
        let drained = engine.drain(within: bound)
        let closing = parts.closeAll()
        logger.info("receipt-verifier stopped", ["drained": .bool(drained), "flushed": .bool(closing.isComplete)])
        return drained && closing.isComplete
    }

    private func registerGauges(engine: VerificationEngine) {
        let gauges: [(String, String, @Sendable (VerificationEngine.Snapshot) -> Int)] = [
            ("verifier_apple_in_flight", "Rounds of Apple calls in flight", { $0.appleInFlight }),
            ("verifier_waiting_for_apple", "Admitted submissions waiting for an Apple slot", { $0.waitingForApple }),
            (
                "verifier_messages_in_progress", "Consumed messages whose outputs are not all acknowledged yet",
                { $0.liveMessages }
            ),
            ("verifier_assigned_partitions", "Partitions assigned to this verifier", { $0.assignedPartitions }),
            (
                "verifier_paused_partitions", "Partitions paused for back-pressure, retry waits or an Apple outage",
                { $0.pausedPartitions }
            ),
            (
                "verifier_intake_held",
                "1 while too many admitted submissions wait for Apple and the consumer's intake is held",
                { $0.intakeHeld ? 1 : 0 }
            ),
        ]
        for (name, help, read) in gauges {
            metrics.collect(name, help: help, kind: .gauge) { [([], Double(read(engine.snapshot)))] }
        }
        metrics.collect(
            "verifier_partition_paused", help: "1 for each partition currently paused", kind: .gauge
        ) {
            engine.pausedPartitions.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) }.map {
                ([("topic", $0.topic), ("partition", String($0.partition))], 1)
            }
        }
    }
}
