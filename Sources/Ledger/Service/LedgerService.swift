import AppStoreServerAPI
import SignedData
import Dispatch
import Foundation
import HTTPServer
import Kafka
import Postgres
import ServiceRuntime
import ServiceSupport
import Synchronization

/// `receipt-ledger`: a consumer of `RESULTS_TOPIC` and `EVENTS_TOPIC` whose worker applies batches to PostgreSQL
/// (offsets in the same transaction; assigned partitions start from the stored offsets), and the HTTP API.
///
/// A `ManagedService`: `init` (each part registered in `parts` as it is made) -> `start()` -> `drain(within:)`
/// (answers the spends and grants waiting, lets the spend batches and the Kafka batch being applied commit, stops the
/// refund responder, then closes the parts, last made first: the consumer, the server, the worker's, the wallet's
/// and the API's database connections, the catalog watcher). The database may be down at start: the
/// worker retries, `/readyz` says so.
public final class LedgerService: ManagedService {
    private let settings: LedgerSettings
    private let logger: Logger
    private let worker: LedgerWorker
    private let consumer: KafkaConsumer
    private let server: HTTPServer
    /// Answers CONSUMPTION_REQUESTs (`LEDGER_CONSUMPTION_RESPONSES`); its own database connection.
    private let responder: ConsumptionResponder
    /// Spends and grants, group-committed on their own database connection.
    private let wallet: WalletBatcher
    /// The items spends and grants may name (`PRODUCT_CATALOG_FILE`, followed).
    private let items: WalletItems
    /// What `/healthz` and `/readyz` answer (`health(link:worker:starts:consumer:)` once everything is made).
    private let currentHealth: DeferredHealth
    public let parts: ServiceParts
    private let drainOnce = DrainOnce()

    /// Defaults for librdkafka properties `KAFKA_*` does not set: statistics every second (lag, `/readyz`), and
    /// a bounded prefetch (memory).
    static let consumerDefaults: [String: String] = [
        "statistics.interval.ms": "1000", "queued.max.messages.kbytes": "16384",
    ]

    /// - Parameters:
    ///   - metrics: the process's registry (`ServiceMain` registers `ledger_build_info` in it).
    ///   - parts: where what `init` makes is registered, to be closed by `drain` or, when `init` throws, by the
    ///     caller (`ServiceMain.start`).
    public init(
        settings: LedgerSettings, logger: Logger, metrics registry: MetricsRegistry = MetricsRegistry(),
        parts: ServiceParts = ServiceParts()
    ) throws(ServiceStartupError) {
        self.settings = settings
        self.logger = logger
        self.parts = parts
        // The API's connection first: it closes after the server that uses it.
        let apiDatabase = DatabaseLink(connectionString: settings.databaseURL, metrics: nil, logger: logger)
        parts.add("API database connection") { apiDatabase.close() }
        let metrics = LedgerMetrics(registry: registry, sandboxPolicy: settings.sandboxPolicy)
        let consumptionMetrics = ConsumptionMetrics(registry: registry)
        let responder = ConsumptionResponder(
            configuration: ConsumptionResponder.Configuration(
                mode: settings.consumption.mode, policy: settings.consumption.policy,
                retryBaseMs: settings.consumption.retryBaseMs),
            sender: try Self.consumptionSender(settings.consumption, logger: logger, registry: registry),
            database: DatabaseLink(connectionString: settings.databaseURL, metrics: nil, logger: logger),
            metrics: consumptionMetrics, logger: logger.named("consumption-responder"))
        self.responder = responder
        let buffer = RecordBuffer(highWater: settings.maxBufferedMessages, lanes: LedgerWorker.lanes)
        // One connection per apply lane; the first one's state is the `ledger_database_up` gauge and readiness.
        let workerDatabases = (0..<LedgerWorker.lanes).map { lane in
            DatabaseLink(connectionString: settings.databaseURL, metrics: lane == 0 ? metrics : nil, logger: logger)
        }
        let database = workerDatabases[0]
        parts.add("worker database connections") { workerDatabases.forEach { $0.close() } }
        let items: WalletItems
        do {
            items = try WalletItems(catalogFile: settings.productCatalogFile, logger: logger, metrics: registry)
        } catch {
            throw .settings(error.description)
        }
        parts.add("product catalog watcher") { items.stopWatching() }
        self.items = items
        let walletDatabases = (0..<WalletBatcher.lanes).map { _ in
            DatabaseLink(connectionString: settings.databaseURL, metrics: nil, logger: logger)
        }
        parts.add("wallet database connections") { walletDatabases.forEach { $0.close() } }
        let wallet = WalletBatcher(databases: walletDatabases, metrics: metrics.wallet, logger: logger.named("wallet"))
        self.wallet = wallet
        // The server before the consumer, so it serves until the consumer has left the group.
        let health = DeferredHealth()
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(listen: settings.listen, threadCount: 2, connectionLimit: 1_024),
            handler: LedgerHTTPHandler(
                endpoints: HealthEndpoints(registry: registry) { health.current },
                apiKeys: BearerKeys(settings.apiKeys), database: apiDatabase,
                queries: DispatchQueue(label: "ledger-api"),
                declarations: TokenDeclarations(
                    store: LedgerStore(
                        topics: settings.topics, policy: settings.ownershipPolicy,
                        sandboxPolicy: settings.sandboxPolicy, clawback: settings.clawback),
                    database: apiDatabase, metrics: metrics, logger: logger.named("ledger-api")),
                wallet: wallet, items: items, walletMetrics: metrics.wallet, nowMs: { SystemTime.wallMilliseconds() }),
            logger: logger.named("ledger-http"))
        parts.add("HTTP server") { server.close() }
        self.server = server
        self.currentHealth = health
        // The link is the one holder of the consumer: the partition starts and the worker reach it through the link.
        // The consumer's delegate: records into `buffer`, fetching paused while it is over
        // `LEDGER_MAX_BUFFERED_MESSAGES`.
        let link = ConsumerLink(
            service: "ledger", logger: logger,
            waterline: ConsumerLink.Waterline(high: buffer.highWater) { buffer.count })
        // Where assigned partitions start (the offsets stored in the database), read off the poll thread when the
        // database does not answer on assignment.
        let starts = PartitionStarts(
            database: database, rebind: settings.rebind, acceptedGaps: settings.acceptedOffsetGaps, link: link,
            gapMetrics: metrics.offsetGaps, logger: logger)
        // Revoked partitions' buffered messages are forgotten: their next owner starts from the offsets in the
        // database, as this instance does on assignment.
        link.attach(
            handlers: ConsumerLink.Handlers(
                received: { message in
                    guard starts.admits(TopicPartition(topic: message.topic, partition: message.partition)) else {
                        return
                    }
                    buffer.append(
                        LedgerRecord(
                            topic: message.topic, partition: message.partition, offset: message.offset,
                            value: message.value, timestampMs: message.timestampMs))
                },
                assigned: { partitions in starts.assigned(partitions) },
                revoking: { partitions in
                    starts.revoking(partitions)
                    buffer.drop(Set(partitions))
                }))
        let worker = LedgerWorker(
            settings: settings, databases: workerDatabases, buffer: buffer, starts: starts, metrics: metrics,
            logger: logger,
            clusterId: { link.consumer?.clusterId(timeout: .seconds(10)) },
            afterBatch: { summary in
                guard let consumer = link.consumer else { return }
                // The database holds the truth; the group's offsets follow for lag and monitoring only.
                for (partition, next) in summary.nextOffsets {
                    try? consumer.storeOffset(partition, nextOffset: next)
                }
                consumer.requestCommit()
                link.checkWaterline()
                if summary.consumptionRequests > 0 {
                    consumptionMetrics.recorded.increment(by: summary.consumptionRequests)
                    responder.wake()
                }
            })
        let consumer: KafkaConsumer
        var kafka = settings.kafka
        for (property, value) in Self.consumerDefaults where kafka[property] == nil { kafka[property] = value }
        do throws(KafkaError) {
            consumer = try KafkaConsumer(
                configuration: kafka, groupId: settings.groupId,
                topics: [settings.topics.results, settings.topics.events], delegate: link, logger: logger,
                metrics: registry, commitInterval: .milliseconds(500),
                startingOffsets: { partitions in
                    starts.startingOffsets(for: partitions, refuse: worker.refuse)
                })
        } catch {
            throw .settings("cannot create the Kafka consumer: \(error.message)")
        }
        parts.add("Kafka consumer", bound: .seconds(10), closing: consumer)
        link.attach(consumer: consumer)
        health.attach { Self.health(link: link, worker: worker, starts: starts, consumer: consumer) }
        self.worker = worker
        self.consumer = consumer
    }

    /// The bound HTTP port (useful with port 0).
    public var port: UInt16 { server.port }

    /// Alive unless the consumer reported a fatal error; ready once the database answers, no assigned partition is
    /// held for an offset gap and the consumer is connected, until draining starts.
    static func health(
        link: ConsumerLink, worker: LedgerWorker, starts: PartitionStarts, consumer: KafkaConsumer
    ) -> Health {
        if let fatal = link.liveness { return .unhealthy(fatal) }
        if let workerHealth = worker.health { return workerHealth }
        if !worker.database.isUp { return Health(readiness: "the database is not reachable (retrying)") }
        if let gaps = starts.gapReadiness { return Health(readiness: gaps) }
        if let unjudged = starts.unjudgedReadiness { return Health(readiness: unjudged) }
        let awaiting = starts.awaitingCount
        if awaiting > 0 {
            return Health(readiness: "\(awaiting) assigned partitions wait for their stored offsets (retrying)")
        }
        if !consumer.isConnected { return Health(readiness: "the consumer is not connected to Kafka") }
        return Health()
    }

    public var health: Health { currentHealth.current }

    /// `LEDGER_SHUTDOWN_TIMEOUT_MS`.
    public var drainBound: Duration { settings.shutdownTimeout }

    /// Binds the HTTP server, starts the worker (which prepares the schema) and starts consuming.
    public func start() throws(ServiceStartupError) {
        try server.start(listening: "LEDGER_LISTEN", settings.listen)
        if settings.apiKeys.isEmpty {
            logger.warning("LEDGER_API_KEYS is empty: the API answers anyone who can reach it")
        }
        worker.start()
        responder.start()
        items.startWatching()
        wallet.start()
        consumer.start()
        logger.info(
            "receipt-ledger started",
            [
                "group_id": .string(settings.groupId), "results_topic": .string(settings.topics.results),
                "events_topic": .string(settings.topics.events), "port": .int(Int(server.port)),
                "ownership_policy": .string(settings.ownershipPolicy.rawValue), "batch_size": .int(settings.batchSize),
                "consumption_responses": .string(settings.consumption.mode.rawValue),
                "clawback": .string(settings.clawback.rawValue),
            ])
    }

    /// Lets the spend batches being applied commit (the spends and grants still waiting are answered 503: retried with
    /// their keys), lets the Kafka batch being applied commit and stops the refund responder, all within `bound`
    /// (each gets what the one before left of it), then closes the parts: leaves the group, stops the server, closes
    /// the database connections. Messages fetched but not applied are read again after the restart, from the stored
    /// offsets.
    @discardableResult
    public func drain(within bound: Duration) -> Bool {
        guard drainOnce.claim() else { return true }
        let deadline = ContinuousClock.now + bound
        let walletDrained = wallet.drain(within: bound)
        let workerDrained = worker.drain(within: max(.zero, deadline - ContinuousClock.now))
        let responderStopped = responder.drain(within: max(.zero, deadline - ContinuousClock.now))
        parts.closeAll()
        let drained = walletDrained && workerDrained && responderStopped
        logger.info("receipt-ledger stopped", ["drained": .bool(drained)])
        return drained
    }

    /// The App Store Server API client the responder sends with, under `send` only: its own libcurl client, the
    /// same JWT signing and pacing as the verifier's (`APPLE_*`).
    private static func consumptionSender(
        _ settings: ConsumptionSettings, logger: Logger, registry: MetricsRegistry
    ) throws(ServiceStartupError) -> (any ConsumptionSending)? {
        guard settings.mode == .send, let api = settings.serverAPI, let credentials = api.credentials else { return nil }
        do {
            return ServerAPIConsumptionSender(
                client: try AppStoreServerAPIClient.make(
                    settings: api, credentials: credentials, logger: logger, metrics: registry))
        } catch {
            throw .settings("cannot start the HTTP client for the App Store Server API: \(error)")
        }
    }
}
