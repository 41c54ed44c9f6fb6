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
    private let consumer: KafkaConsumer
    private let server: HTTPServer
    private let apiDatabase: DatabaseLink
    /// Answers CONSUMPTION_REQUESTs (`LEDGER_CONSUMPTION_RESPONSES`); its own database connection.
    private let responder: ConsumptionResponder
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
                revoking: { partitions in buffer.drop(Set(partitions)) }))
        let consumerBox = Locked<KafkaConsumer?>(nil)
        let worker = LedgerWorker(
            settings: settings, buffer: buffer, metrics: metrics, logger: logger,
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
        let database = worker.database
        let consumer: KafkaConsumer
        var kafka = settings.kafka
        for (property, value) in Self.consumerDefaults where kafka[property] == nil { kafka[property] = value }
        do throws(KafkaError) {
            consumer = try KafkaConsumer(
                configuration: kafka, groupId: settings.groupId,
                topics: [settings.topics.results, settings.topics.events], delegate: link, logger: logger,
                metrics: registry, commitInterval: .milliseconds(500),
                startingOffsets: { partitions in
                    let stored = Self.storedOffsets(
                        partitions, database: database, stopping: { worker.isStopping }, logger: logger)
                    return Self.checkTopics(
                        stored, consumer: consumerBox.withLock { $0 }, database: database, worker: worker,
                        rebind: settings.rebind, logger: logger)
                })
        } catch {
            throw .settings("cannot create the Kafka consumer: \(error.message)")
        }
        consumerBox.withLock { $0 = consumer }
        link.attach(consumer: consumer)
        let apiDatabase = DatabaseLink(connectionString: settings.databaseURL, metrics: nil, logger: logger)
        let handler = LedgerHTTPHandler(
            endpoints: HealthEndpoints(registry: registry) {
                Self.health(link: link, worker: worker, database: database, consumer: consumer)
            },
            apiKeys: BearerKeys(settings.apiKeys), database: apiDatabase, queries: DispatchQueue(label: "ledger-api"),
            nowMs: { SystemTime.wallMilliseconds() })
        self.buffer = buffer
        self.link = link
        self.worker = worker
        self.consumer = consumer
        self.apiDatabase = apiDatabase
        self.responder = responder
        self.server = HTTPServer(
            configuration: HTTPServerConfiguration(listen: settings.listen, threadCount: 2, connectionLimit: 1_024),
            handler: handler, logger: logger.named("ledger-http"))
    }

    /// The bound HTTP port (useful with port 0).
    public var port: UInt16 { server.port }

    /// Alive unless the consumer reported a fatal error; ready once the database answers and the consumer is
    /// connected, until draining starts.
    static func health(
        link: ConsumerLink, worker: LedgerWorker, database: DatabaseLink, consumer: KafkaConsumer
    ) -> Health {
        if let fatal = link.liveness { return .unhealthy(fatal) }
        if let workerHealth = worker.health { return workerHealth }
        if !database.isUp { return Health(readiness: "the database is not reachable (retrying)") }
        if !consumer.isConnected { return Health(readiness: "the consumer is not connected to Kafka") }
        return Health()
    }

    public var health: Health {
        Self.health(link: link, worker: worker, database: worker.database, consumer: consumer)
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
        consumer.start()
        logger.info(
            "receipt-ledger started",
            [
                "group_id": .string(settings.groupId), "results_topic": .string(settings.topics.results),
                "events_topic": .string(settings.topics.events), "port": .int(Int(server.port)),
                "ownership_policy": .string(settings.ownershipPolicy.rawValue), "batch_size": .int(settings.batchSize),
                "consumption_responses": .string(settings.consumption.mode.rawValue),
            ])
    }

    /// Lets the batch being applied commit (within `bound`), then leaves the group and stops the server. Messages
    /// fetched but not applied are read again after the restart, from the stored offsets.
    @discardableResult
    public func drain(within bound: Duration) -> Bool {
        guard drainOnce.claim() else { return true }
        let responderStopped = responder.stop(timeout: bound)
        let drained = worker.stop(timeout: bound) && responderStopped
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

    /// The guard against an earlier incarnation of a topic: a partition whose stored offset lies beyond the
    /// partition's end (the topic was created again, or is another cluster's) would take new messages for applied
    /// ones. Under `LEDGER_REBIND=topics` such partitions are applied again from their beginning; otherwise the
    /// ledger refuses to run.
    private static func checkTopics(
        _ stored: [TopicPartition: Int64], consumer: KafkaConsumer?, database: DatabaseLink, worker: LedgerWorker,
        rebind: Set<KafkaBinding.Rebind>, logger: Logger
    ) -> [TopicPartition: Int64] {
        guard let consumer, !stored.isEmpty else { return stored }
        var ends: [TopicPartition: Int64] = [:]
        for partition in stored.keys {
            ends[partition] = consumer.highWatermark(partition, timeout: .seconds(10))
        }
        let unknown = stored.keys.filter { ends[$0] == nil }.map(\.description).sorted()
        if !unknown.isEmpty {
            // Not judged this time (the leader did not answer); the next assignment checks them again.
            logger.warning(
                "the end of some partitions is not known: not checked against their stored offsets",
                ["partitions": .string(unknown.joined(separator: ", "))])
        }
        let stale = KafkaBinding.stalePartitions(stored: stored, highWatermarks: ends)
        guard !stale.isEmpty else { return stored }
        guard rebind.contains(.topics) else {
            worker.refuse(KafkaBinding.topicRefusal(stale.map(\.description)))
            return stored
        }
        do throws(PostgresError) {
            try database.withConnection { connection throws(PostgresError) in
                try connection.transaction { session throws(PostgresError) in
                    try KafkaBinding.forgetOffsets(stale, in: session)
                }
            }
        } catch {
            worker.refuse("cannot forget the stored offsets of \(stale.map(\.description)) (LEDGER_REBIND=topics): \(error)")
            return stored
        }
        logger.warning(
            "partitions stored beyond their end are applied again from their beginning (LEDGER_REBIND=topics)",
            ["partitions": .string(stale.map(\.description).joined(separator: ", "))])
        return stored.filter { !stale.contains($0.key) }
    }

    /// The offsets stored in the database for `partitions`, asked on assignment; retried until the database
    /// answers (nothing of those partitions is fetched meanwhile) or the service stops.
    private static func storedOffsets(
        _ partitions: [TopicPartition], database: DatabaseLink, stopping: @Sendable () -> Bool, logger: Logger
    ) -> [TopicPartition: Int64] {
        var backoff = Backoff()
        while true {
            do {
                let stored = try database.withConnection { connection throws(PostgresError) in
                    try connection.withSession { session throws(PostgresError) in
                        try LedgerStore.storedOffsets(partitions, in: session)
                    }
                }
                logger.info(
                    "partitions start from the stored offsets",
                    ["partitions": .int(partitions.count), "known": .int(stored.count)])
                return stored
            } catch {
                // The schema may not exist yet (first start): nothing stored means from the beginning.
                if error.sqlState == "42P01" { return [:] }
                if stopping() { return [:] }
                logger.error("cannot read the stored offsets; retrying", ["error": .string(error.description)])
                backoff.sleep()
            }
        }
    }
}
