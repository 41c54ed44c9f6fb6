import AppStore
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
/// A `ManagedService`: `init` -> `start()` -> `drain(within:)` (lets the batch being applied commit, closes the
/// consumer, stops the server). The database may be down at start: the worker retries, `/readyz` says so.
public final class LedgerService: ManagedService {
    private let settings: LedgerSettings
    private let logger: Logger
    private let registry: MetricsRegistry
    private let buffer: RecordBuffer
    /// The consumer's delegate: records into `buffer`, fetching paused while it is over `LEDGER_MAX_BUFFERED_MESSAGES`.
    private let link: ConsumerLink
    private let worker: LedgerWorker
    /// Where assigned partitions start (the offsets stored in the database), read off the poll thread when the
    /// database does not answer on assignment.
    private let starts: PartitionStarts
    private let consumer: KafkaConsumer
    private let server: HTTPServer
    private let apiDatabase: DatabaseLink
    /// Answers CONSUMPTION_REQUESTs (`LEDGER_CONSUMPTION_RESPONSES`); its own database connection.
    private let responder: ConsumptionResponder
    /// Spends and grants, group-committed on their own database connection.
    private let wallet: WalletBatcher
    private let items: WalletItems
    private let drainOnce = DrainOnce()

    /// Defaults for librdkafka properties `KAFKA_*` does not set: statistics every second (lag, `/readyz`), and
    /// a bounded prefetch (memory).
    static let consumerDefaults: [String: String] = [
        "statistics.interval.ms": "1000", "queued.max.messages.kbytes": "16384",
    ]

    /// - Parameters:
    ///   - metrics: the process's registry (`ServiceMain` registers `ledger_build_info` in it).
    public init(settings: LedgerSettings, logger: Logger, metrics registry: MetricsRegistry = MetricsRegistry())
        throws(ServiceStartupError)
    {
        self.settings = settings
        self.logger = logger
        self.registry = registry
        let metrics = LedgerMetrics(registry: registry, sandboxPolicy: settings.sandboxPolicy)
        let consumptionMetrics = ConsumptionMetrics(registry: registry)
        let responder = ConsumptionResponder(
            configuration: ConsumptionResponder.Configuration(
                mode: settings.consumption.mode, policy: settings.consumption.policy,
                retryBaseMs: settings.consumption.retryBaseMs),
            sender: try Self.consumptionSender(settings.consumption, logger: logger, registry: registry),
            database: DatabaseLink(connectionString: settings.databaseURL, metrics: nil, logger: logger),
            metrics: consumptionMetrics, logger: logger.named("consumption-responder"))
        let buffer = RecordBuffer(highWater: settings.maxBufferedMessages)
        let database = DatabaseLink(connectionString: settings.databaseURL, metrics: metrics, logger: logger)
        let starts = PartitionStarts(database: database, rebind: settings.rebind, logger: logger)
        // Revoked partitions' buffered messages are forgotten: their next owner starts from the offsets in the
        // database, as this instance does on assignment.
        let link = ConsumerLink(
            service: "ledger", logger: logger,
            waterline: ConsumerLink.Waterline(high: buffer.highWater) { buffer.count },
            handlers: ConsumerLink.Handlers(
                received: { message in
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
        let consumerBox = Locked<KafkaConsumer?>(nil)
        let worker = LedgerWorker(
            settings: settings, database: database, buffer: buffer, starts: starts, metrics: metrics, logger: logger,
            clusterId: { consumerBox.withLock { $0 }?.clusterId(timeout: .seconds(10)) },
            afterBatch: { summary in
                guard let consumer = consumerBox.withLock({ $0 }) else { return }
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
        consumerBox.withLock { $0 = consumer }
        link.attach(consumer: consumer)
        starts.attach(consumer: consumer, pausedByWaterline: { link.isPausedByWaterline })
        let apiDatabase = DatabaseLink(connectionString: settings.databaseURL, metrics: nil, logger: logger)
        let items: WalletItems
        do {
            items = try WalletItems(catalogFile: settings.productCatalogFile, logger: logger, metrics: registry)
        } catch {
            throw .settings(error.description)
        }
        let wallet = WalletBatcher(
            database: DatabaseLink(connectionString: settings.databaseURL, metrics: nil, logger: logger),
            metrics: metrics.wallet, logger: logger.named("wallet"))
        let handler = LedgerHTTPHandler(
            endpoints: HealthEndpoints(registry: registry) {
                Self.health(link: link, worker: worker, starts: starts, consumer: consumer)
            },
            apiKeys: BearerKeys(settings.apiKeys), database: apiDatabase, queries: DispatchQueue(label: "ledger-api"),
            declarations: TokenDeclarations(
                store: LedgerStore(
                    topics: settings.topics, policy: settings.ownershipPolicy, sandboxPolicy: settings.sandboxPolicy,
                    clawback: settings.clawback),
                database: apiDatabase, metrics: metrics, logger: logger.named("ledger-api")),
            wallet: wallet, items: items, walletMetrics: metrics.wallet, nowMs: { SystemTime.wallMilliseconds() })
        self.buffer = buffer
        self.link = link
        self.worker = worker
        self.starts = starts
        self.consumer = consumer
        self.apiDatabase = apiDatabase
        self.responder = responder
        self.wallet = wallet
        self.items = items
        self.server = HTTPServer(
            configuration: HTTPServerConfiguration(listen: settings.listen, threadCount: 2, connectionLimit: 1_024),
            handler: handler, logger: logger.named("ledger-http"))
    }

    /// The bound HTTP port (useful with port 0).
    public var port: UInt16 { server.port }

    /// Alive unless the consumer reported a fatal error; ready once the database answers and the consumer is
    /// connected, until draining starts.
    static func health(
        link: ConsumerLink, worker: LedgerWorker, starts: PartitionStarts, consumer: KafkaConsumer
    ) -> Health {
        if let fatal = link.liveness { return .unhealthy(fatal) }
        if let workerHealth = worker.health { return workerHealth }
        if !worker.database.isUp { return Health(readiness: "the database is not reachable (retrying)") }
        let awaiting = starts.awaitingCount
        if awaiting > 0 {
            return Health(readiness: "\(awaiting) assigned partitions wait for their stored offsets (retrying)")
        }
        if !consumer.isConnected { return Health(readiness: "the consumer is not connected to Kafka") }
        return Health()
    }

    public var health: Health {
        Self.health(link: link, worker: worker, starts: starts, consumer: consumer)
    }

    /// `LEDGER_SHUTDOWN_TIMEOUT_MS`.
    public var drainBound: Duration { settings.shutdownTimeout }

    /// Binds the HTTP server, starts the worker (which prepares the schema) and starts consuming.
    public func start() throws(ServiceStartupError) {
        do {
            try server.start()
        } catch {
            throw ServiceStartupError("cannot listen on LEDGER_LISTEN \(settings.listen): \(error)")
        }
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

    /// Lets the batch being applied commit (within `bound`), then leaves the group and stops the server. Messages
    /// fetched but not applied are read again after the restart, from the stored offsets.
    @discardableResult
    public func drain(within bound: Duration) -> Bool {
        guard drainOnce.claim() else { return true }
        // Spends and grants waiting get 503 (retried with their keys); the batch being applied commits first.
        let walletStopped = wallet.drain(within: bound)
        items.stopWatching()
        let responderStopped = responder.drain(within: bound) && walletStopped
        let drained = worker.drain(within: bound) && responderStopped
        consumer.close(timeout: .seconds(10))
        server.close()
        worker.database.close()
        apiDatabase.close()
        logger.info("receipt-ledger stopped", ["drained": .bool(drained)])
        return drained
    }

    /// The App Store Server API client the responder sends with, under `send` only: its own libcurl client, the
    /// same JWT signing and pacing as the verifier's (`APPLE_*`).
    private static func consumptionSender(
        _ settings: ConsumptionSettings, logger: Logger, registry: MetricsRegistry
    ) throws(ServiceStartupError) -> (any ConsumptionSending)? {
        guard settings.mode == .send, let api = settings.serverAPI, let credentials = api.credentials else { return nil }
        let http: CurlHTTPClient
        do {
            http = try CurlHTTPClient(configuration: HTTPClientConfiguration(maxInFlight: 4, requestTimeoutMs: 30_000))
        } catch {
            throw .settings("cannot start the HTTP client for the App Store Server API: \(error)")
        }
        let client = AppStoreServerAPIClient(
            http: http, endpoints: api.endpoints, tokens: AppStoreServerAPITokenProvider(credentials: credentials),
            pacer: ServerAPIPacer(pacing: ServerAPIPacing(productionRatePerSecond: api.maxRequestsPerSecond)),
            logger: logger.named("server-api"), metrics: registry)
        return ServerAPIConsumptionSender(client: client)
    }
}
