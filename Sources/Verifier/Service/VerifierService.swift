import AppStore
import Dispatch
import HTTPServer
import Kafka
import ServiceSupport
import SignedData
import Synchronization

/// Why the verifier could not start.
public struct VerifierStartupError: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// The receipt verifier as a service: a Kafka consumer (RECEIPTS_TOPIC, RETRY_TOPIC and NOTIFICATIONS_TOPIC, group
/// VERIFIER_GROUP_ID) feeding the `VerificationEngine`, the App Store client, the notification verifier (anchored to
/// APPLE_ROOT_CERTIFICATES), an idempotent producer for outputs, and the health/metrics endpoint.
///
/// Lifecycle: `init` creates the clients (nothing runs yet), `start` binds the endpoint and starts consuming,
/// `shutdown` drains (pause, finish or abandon in-flight work within `shutdownTimeout`, offsets stored as outputs
/// are acknowledged), closes the consumer (commits stored offsets, leaves the group), stops the App Store client,
/// flushes and closes the producer, and stops the endpoint. `shutdown` is idempotent.
public final class VerifierService: Sendable {
    private let settings: VerifierSettings
    private let logger: Logger
    let metrics: MetricsRegistry
    private let engine: VerificationEngine
    private let consumer: KafkaConsumer
    private let producer: KafkaProducer
    private let appleVerifier: ReceiptVerifier
    /// `PRODUCT_CATALOG_FILE`, followed (re-read within a second of a change) until shutdown.
    private let catalog: ProductCatalogFile?
    private let bridge: KafkaConsumerBridge
    private let server: HTTPServer
    private let ticker: RepeatingTicker
    private let shutDown = Locked(false)

    public init(settings: VerifierSettings, logger: Logger, metrics: MetricsRegistry = MetricsRegistry())
        throws(VerifierStartupError)
    {
        self.settings = settings
        self.logger = logger
        self.metrics = metrics
        BuildInfo.register(
            in: metrics, prefix: "verifier", libraries: [("librdkafka_version", KafkaLibrary.version)])
        ProcessMetrics.register(in: metrics)
        for property in settings.overriddenConsumerProperties {
            logger.warning(
                "KAFKA_* setting ignored for the consumer: auto-commit commits stored offsets on revoke and close",
                ["setting": .string(property)])
        }
        let producer: KafkaProducer
        do {
            producer = try KafkaProducer(configuration: settings.kafka, logger: logger, metrics: metrics)
        } catch {
            throw VerifierStartupError(description: "cannot create the Kafka producer: \(error.message)")
        }
        var catalog: ProductCatalogFile?
        if let path = settings.appStore.productCatalogFile {
            do {
                catalog = try ProductCatalogFile(path: path, logger: logger.named("product-catalog"), metrics: metrics)
            } catch {
                producer.close(timeout: .seconds(1))
                throw VerifierStartupError(description: "invalid configuration: \(error.description)")
            }
        }
        let appleVerifier: ReceiptVerifier
        do {
            appleVerifier = try ReceiptVerifier.make(
                settings: settings.appStore, serverAPI: settings.serverAPI, catalog: catalog,
                logger: logger.named("appstore"), metrics: metrics)
        } catch {
            producer.close(timeout: .seconds(1))
            throw VerifierStartupError(description: "cannot create the App Store client: \(error)")
        }
        // The notifications' own verifier (its chain and header caches), anchored to APPLE_ROOT_CERTIFICATES.
        let signedData = AppleSignedDataVerifier(trustedRoots: settings.serverAPI.rootCertificates)
        let bridge = KafkaConsumerBridge(revokeTimeout: settings.revokeTimeout, logger: logger)
        let engine = VerificationEngine(
            configuration: VerificationEngine.Configuration(
                topics: settings.topics, limits: settings.limits, retryPolicy: settings.retryPolicy,
                breaker: settings.breaker),
            verifier: AppStoreSubmissionVerifier(verifier: appleVerifier, roundDeadline: settings.roundDeadline),
            publisher: KafkaRecordPublisher(producer: producer), control: bridge, clock: DispatchClock(queue: DispatchQueue(label: "verifier-timers")),
            logger: logger, metrics: VerifierMetrics(registry: metrics),
            notifications: NotificationProcessor(
                verifier: signedData, policy: settings.notificationPolicy, catalog: catalog))
        bridge.attach(engine: engine)
        let consumer: KafkaConsumer
        do {
            consumer = try KafkaConsumer(
                configuration: settings.consumerKafka, groupId: settings.groupId,
                topics: [settings.topics.receipts, settings.topics.retry, settings.topics.notifications],
                delegate: bridge, logger: logger,
                metrics: metrics, commitInterval: settings.commitInterval)
        } catch {
            producer.close(timeout: .seconds(1))
            throw VerifierStartupError(description: "cannot create the Kafka consumer: \(error.message)")
        }
        bridge.attach(consumer: consumer)
        self.producer = producer
        self.appleVerifier = appleVerifier
        self.catalog = catalog
        self.consumer = consumer
        self.bridge = bridge
        self.engine = engine
        self.ticker = RepeatingTicker(interval: .milliseconds(250)) { engine.tick() }

        let handler = VerifierHealthHandler(
            registry: metrics,
            liveness: { bridge.fatalError.withLock { $0 } ?? engine.livenessProblem },
            readiness: {
                if engine.snapshot.stopping { return "draining" }
                if let fatal = bridge.fatalError.withLock({ $0 }) { return "fatal Kafka error: \(fatal)" }
                if let publishing = engine.publishingProblem { return publishing }
                if !consumer.isConnected { return "the consumer is not connected to Kafka" }
                if !producer.isConnected { return "the producer is not connected to Kafka" }
                return nil
            })
        self.server = HTTPServer(
            configuration: HTTPServerConfiguration(
                listen: settings.metricsListen, threadCount: 1, connectionLimit: 256),
            handler: handler, logger: logger.named("verifier-http"))
        registerGauges(engine: engine)
    }

    /// The bound port of the health/metrics endpoint (useful with port 0).
    var metricsPort: UInt16 { server.port }

    /// Binds the endpoint, starts the probe ticker and starts consuming.
    /// - Throws: `VerifierStartupError` when the endpoint cannot be bound.
    public func start() throws(VerifierStartupError) {
        do {
            try server.start()
        } catch {
            throw VerifierStartupError(
                description: "cannot listen on VERIFIER_METRICS_LISTEN \(settings.metricsListen): \(error)")
        }
        ticker.start()
        catalog?.startWatching()
        consumer.start()
        settings.kafka.logIgnoredServiceLinks(logger)
        logger.info(
            "receipt-verifier started",
            [
                "group_id": .string(settings.groupId), "receipts_topic": .string(settings.topics.receipts),
                "retry_topic": .string(settings.topics.retry),
                "notifications_topic": .string(settings.topics.notifications),
                "events_topic": .string(settings.topics.events), "max_in_flight": .int(settings.limits.maxInFlight),
                "metrics_port": .int(Int(server.port)), "apple": .string(settings.appStore.description),
                "server_api": .string(settings.serverAPI.description),
            ])
    }

    /// Drains and closes everything (see the type's documentation). Blocks for at most about
    /// `shutdownTimeout` plus the Kafka close bounds.
    public func shutdown() {
        let first = shutDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        let drained = engine.drain(timeout: settings.shutdownTimeout)
        ticker.stop()
        consumer.close(timeout: .seconds(10))
        // Rounds still at Apple end now, without a verdict; the drain gave their partitions up, so they write
        // nothing (their messages are read again after the restart).
        appleVerifier.shutdown()
        catalog?.stopWatching()
        let flushed = producer.flush(timeout: .seconds(5))
        producer.close(timeout: .seconds(2))
        server.stop()
        logger.info("receipt-verifier stopped", ["drained": .bool(drained), "flushed": .bool(flushed)])
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
