import Dispatch
import Foundation
import HTTPServer
import Kafka
import Postgres
import ServiceSupport
import Synchronization

/// A failure to start (the consumer or the HTTP server); the message says which setting to look at.
public struct LedgerStartupError: Error, CustomStringConvertible {
    public let description: String
}

/// `receipt-ledger`: a consumer of `RESULTS_TOPIC` and `EVENTS_TOPIC` whose worker applies batches to PostgreSQL
/// (offsets in the same transaction; assigned partitions start from the stored offsets), and the HTTP API.
///
/// Lifecycle: `init` -> `start()` -> `shutdown()` (drains the batch being applied, closes the consumer, stops the
/// server). The database may be down at start: the worker retries, `/readyz` says so.
public final class LedgerService: Sendable {
    private let settings: LedgerSettings
    private let logger: Logger
    private let registry = MetricsRegistry()
    private let buffer: RecordBuffer
    private let bridge: LedgerConsumerBridge
    private let worker: LedgerWorker
    private let consumer: KafkaConsumer
    private let server: HTTPServer
    private let apiDatabase: DatabaseLink
    private let shutDown = Locked(false)

    /// Defaults for librdkafka properties `KAFKA_*` does not set: statistics every second (lag, `/readyz`), and
    /// a bounded prefetch (memory).
    static let consumerDefaults: [String: String] = [
        "statistics.interval.ms": "1000", "queued.max.messages.kbytes": "16384",
    ]

    public init(settings: LedgerSettings, logger: Logger) throws(LedgerStartupError) {
        self.settings = settings
        self.logger = logger
        let metrics = LedgerMetrics(registry: registry, sandboxPolicy: settings.sandboxPolicy)
        let buffer = RecordBuffer(highWater: settings.maxBufferedMessages)
        let bridge = LedgerConsumerBridge(buffer: buffer, logger: logger)
        let consumerBox = Locked<KafkaConsumer?>(nil)
        let worker = LedgerWorker(
            settings: settings, buffer: buffer, metrics: metrics, logger: logger,
            afterBatch: { summary in
                guard let consumer = consumerBox.withLock({ $0 }) else { return }
                // The database holds the truth; the group's offsets follow for lag and monitoring only.
                for (partition, next) in summary.nextOffsets {
                    try? consumer.storeOffset(
                        TopicPartition(topic: partition.topic, partition: partition.partition), nextOffset: next)
                }
                consumer.requestCommit()
                bridge.resumeIfDrained(consumer)
            })
        let database = worker.database
        let consumer: KafkaConsumer
        var kafka = settings.kafka
        for (property, value) in Self.consumerDefaults where kafka[property] == nil { kafka[property] = value }
        do throws(KafkaError) {
            consumer = try KafkaConsumer(
                configuration: kafka, groupId: settings.groupId,
                topics: [settings.topics.results, settings.topics.events], delegate: bridge, logger: logger,
                metrics: registry, commitInterval: .milliseconds(500),
                startingOffsets: { partitions in
                    Self.storedOffsets(partitions, database: database, stopping: { worker.isStopping }, logger: logger)
                })
        } catch {
            throw LedgerStartupError(description: "cannot create the Kafka consumer: \(error.message)")
        }
        consumerBox.withLock { $0 = consumer }
        let apiDatabase = DatabaseLink(connectionString: settings.databaseURL, metrics: nil, logger: logger)
        let handler = LedgerHTTPHandler(
            registry: registry, apiKeys: settings.apiKeys.map { Array($0.utf8) }, database: apiDatabase,
            queries: DispatchQueue(label: "ledger-api"),
            liveness: { bridge.fatalError.withLock { $0 }.map { "fatal Kafka error: \($0)" } },
            readiness: {
                if worker.isStopping { return "draining" }
                if let fatal = bridge.fatalError.withLock({ $0 }) { return "fatal Kafka error: \(fatal)" }
                if !database.isUp { return "the database is not reachable (retrying)" }
                if !consumer.isConnected { return "the consumer is not connected to Kafka" }
                return nil
            })
        self.buffer = buffer
        self.bridge = bridge
        self.worker = worker
        self.consumer = consumer
        self.apiDatabase = apiDatabase
        self.server = HTTPServer(
            configuration: HTTPServerConfiguration(listen: settings.listen, threadCount: 2, connectionLimit: 1_024),
            handler: handler, logger: logger.named("ledger-http"))
    }

    /// The bound HTTP port (useful with port 0).
    public var port: UInt16 { server.port }

    /// Binds the HTTP server, starts the worker (which prepares the schema) and starts consuming.
    public func start() throws(LedgerStartupError) {
        do {
            try server.start()
        } catch {
            throw LedgerStartupError(description: "cannot listen on LEDGER_LISTEN \(settings.listen): \(error)")
        }
        if settings.apiKeys.isEmpty {
            logger.warning("LEDGER_API_KEYS is empty: the API answers anyone who can reach it")
        }
        worker.start()
        consumer.start()
        logger.info(
            "receipt-ledger started",
            [
                "group_id": .string(settings.groupId), "results_topic": .string(settings.topics.results),
                "events_topic": .string(settings.topics.events), "port": .int(Int(server.port)),
                "ownership_policy": .string(settings.ownershipPolicy.rawValue), "batch_size": .int(settings.batchSize),
            ])
    }

    /// Lets the batch being applied commit (within `LEDGER_SHUTDOWN_TIMEOUT_MS`), then leaves the group and stops
    /// the server. Messages fetched but not applied are read again after the restart, from the stored offsets.
    public func shutdown() {
        let first = shutDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        let drained = worker.stop(timeout: settings.shutdownTimeout)
        consumer.close(timeout: .seconds(10))
        server.stop()
        worker.database.close()
        apiDatabase.close()
        logger.info("receipt-ledger stopped", ["drained": .bool(drained)])
    }

    /// The offsets stored in the database for `partitions`, asked on assignment; retried until the database
    /// answers (nothing of those partitions is fetched meanwhile) or the service stops.
    private static func storedOffsets(
        _ partitions: [TopicPartition], database: DatabaseLink, stopping: @Sendable () -> Bool, logger: Logger
    ) -> [TopicPartition: Int64] {
        let keys = partitions.map { PartitionKey(topic: $0.topic, partition: $0.partition) }
        var backoff = 0.1
        while true {
            do {
                let stored = try database.withConnection { connection throws(PostgresError) in
                    try connection.withSession { session throws(PostgresError) in
                        try LedgerStore.storedOffsets(keys, in: session)
                    }
                }
                var offsets: [TopicPartition: Int64] = [:]
                for (key, offset) in stored { offsets[TopicPartition(topic: key.topic, partition: key.partition)] = offset }
                logger.info(
                    "partitions start from the stored offsets",
                    ["partitions": .int(partitions.count), "known": .int(offsets.count)])
                return offsets
            } catch {
                // The schema may not exist yet (first start): nothing stored means from the beginning.
                if error.sqlState == "42P01" { return [:] }
                if stopping() { return [:] }
                logger.error("cannot read the stored offsets; retrying", ["error": .string(error.description)])
                Thread.sleep(forTimeInterval: backoff)
                backoff = min(backoff * 2, 5)
            }
        }
    }
}
