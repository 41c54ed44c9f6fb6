import Foundation
import HTTPServer
import Kafka
import ReceiptModel
import ServiceRuntime
import ServiceSupport

/// The ingest service: the HTTP API in front of a `SubmissionPublisher`, with a `ResultIndex` fed by a `ResultFeed`
/// for verdicts. Testable in-process with fakes and port 0; `receipt-ingest` runs it with a `KafkaProducer` and a
/// `KafkaResultFeed`.
///
/// A `ManagedService`: `start()` starts the feed and binds; `drain(within:)` stops accepting, answers requests
/// waiting for a verdict 202 at once, waits for every submission still waiting on Kafka (up to the delivery timeout,
/// the listener's stop grace), closes the listener, flushes an owned producer (`make`) within the bound, then
/// closes the parts, last made first: the feed, then the owned producer. A publisher passed to `init` stays its
/// owner's to close.
public final class IngestService: ManagedService {
    public let settings: IngestSettings
    /// The verdicts this instance knows (fed by `resultFeed`; tests may `record` into it directly).
    public let results: ResultIndex
    private let resultFeed: (any ResultFeed)?
    private let handler: IngestHandler
    private let server: HTTPServer
    private let logger: Logger
    /// The producer `make` created, flushed by `drain` (and closed with the parts).
    private let ownedProducer: KafkaProducer?
    /// The result feed and the owned producer, closed at the end of `drain` (a passed feed is closed too).
    public let parts: ServiceParts
    private let drainOnce = DrainOnce()

    /// - Parameters:
    ///   - resultFeed: where results come from; nil = none (the index then only knows what is recorded into it,
    ///     and `/readyz` does not wait for a read-back).
    ///   - results: the index (default: one with `settings.resultIndexLimits`).
    public convenience init(
        settings: IngestSettings, publisher: any SubmissionPublisher, resultFeed: (any ResultFeed)? = nil,
        results: ResultIndex? = nil, logger: Logger, metrics: MetricsRegistry
    ) {
        let parts = ServiceParts()
        if let resultFeed { Self.register(resultFeed, in: parts) }
        self.init(
            settings: settings, publisher: publisher, resultFeed: resultFeed, results: results, logger: logger,
            metrics: metrics, ownedProducer: nil, parts: parts)
    }

    private init(
        settings: IngestSettings, publisher: any SubmissionPublisher, resultFeed: (any ResultFeed)?,
        results: ResultIndex?, logger: Logger, metrics: MetricsRegistry, ownedProducer: KafkaProducer?,
        parts: ServiceParts
    ) {
        let ingestMetrics = IngestMetrics(registry: metrics)
        let results = results ?? ResultIndex(limits: settings.resultIndexLimits)
        ingestMetrics.observe(results)
        let handler = IngestHandler(
            settings: settings, publisher: publisher, results: results, resultFeed: resultFeed,
            metrics: ingestMetrics, logger: logger)
        var configuration = HTTPServerConfiguration(listen: settings.listen)
        // Each route's own limit is applied from the request head (`IngestHandler.admit`); this is the largest.
        configuration.maxBodyBytes = max(settings.maxBodyBytes, settings.notificationMaxBodyBytes)
        configuration.maxBufferedBodyBytes = settings.maxBufferedBytes
        configuration.busyResponse = APIError.serverBusy(retryAfter: settings.retryAfterSeconds).response
        configuration.threadCount = settings.httpThreads
        configuration.connectionLimit = settings.maxConnections
        configuration.perIPConnectionLimit = settings.maxConnectionsPerIP
        configuration.idleTimeoutSeconds = settings.idleTimeoutSeconds
        configuration.requestHeadTimeout = .seconds(settings.headerTimeoutSeconds)
        configuration.bodyTimeout = .seconds(settings.bodyTimeoutSeconds)
        configuration.maxHeaderBytes = settings.maxHeaderBytes
        // librdkafka normally reports a timeout itself at message.timeout.ms (the effective delivery timeout); the
        // handler answers kafka_timeout with the submission id itself shortly after (`kafkaAnswerTimeoutMs`), and a
        // wait ends at its wait_ms. The server's deadline (whose 503 cannot name the submission) and the stop grace
        // lie beyond both, and only guarantee an answer if neither happens.
        let deliveryTimeoutMs = settings.effectiveDeliveryTimeoutMs
        let handlerTimeoutMs = IngestHandler.kafkaAnswerTimeoutMs(settings)
        configuration.responseDeadline = .milliseconds(handlerTimeoutMs + settings.maxWaitMs + 1000)
        configuration.deadlineResponse = APIError.kafkaTimeout(
            retryAfter: settings.retryAfterSeconds, timeoutMs: deliveryTimeoutMs
        ).response
        configuration.stopGracePeriod = .milliseconds(handlerTimeoutMs + 500)
        self.settings = settings
        self.results = results
        self.resultFeed = resultFeed
        self.handler = handler
        self.logger = logger
        self.ownedProducer = ownedProducer
        self.parts = parts
        self.server = HTTPServer(
            configuration: configuration, handler: handler, logger: logger.named(logger.label + ".http"),
            onResponse: { ingestMetrics.record($0) })
        ingestMetrics.observe(server)
    }

    /// The service `receipt-ingest` runs: over a `KafkaProducer` (owned: flushed by `drain`, closed with the parts)
    /// and a `KafkaResultFeed` following `RESULTS_TOPIC`, each registered in `parts` as it is made.
    /// - Throws: `ServiceStartupError` (a settings error: exit 2) when a Kafka client cannot be created; what was
    ///   made is in `parts` for the caller to close (`ServiceMain.start`).
    public static func make(
        settings: IngestSettings, logger: Logger, metrics: MetricsRegistry, parts: ServiceParts = ServiceParts()
    ) throws(ServiceStartupError) -> IngestService {
        let producer = try parts.makeProducer(
            configuration: settings.kafka, logger: logger, metrics: metrics, closeBound: .seconds(5))
        let resultFeed: KafkaResultFeed
        do {
            resultFeed = try KafkaResultFeed(
                configuration: settings.resultsKafka, topic: settings.resultsTopic, replay: settings.resultReplay,
                readBackLimit: settings.resultIndexLimits.maxEntries,
                readinessBound: .seconds(settings.resultReadinessTimeoutSeconds), logger: logger)
        } catch {
            throw .settings("cannot create the results follower: \(error.message) (kafka_code \(error.code.rawValue))")
        }
        register(resultFeed, in: parts)
        return IngestService(
            settings: settings, publisher: producer, resultFeed: resultFeed, results: nil, logger: logger,
            metrics: metrics, ownedProducer: producer, parts: parts)
    }


    /// The feed closes after the listener (no request waits for a verdict any more), within 5 s.
    private static func register(_ resultFeed: any ResultFeed, in parts: ServiceParts) {
        parts.add("results follower", bound: .seconds(5), closing: resultFeed)
    }

    /// Always alive (a Kafka outage is answered 503 + Retry-After per request); ready once Kafka was first reached
    /// and recent results were read back, until draining starts.
    public var health: Health { Health(readiness: handler.readinessProblem()) }

    /// How long `drain` flushes an owned producer: the delivery timeout (`INGEST_KAFKA_DELIVERY_TIMEOUT_MS`, or
    /// `KAFKA_MESSAGE_TIMEOUT_MS`), after which librdkafka fails what Kafka has not acknowledged anyway.
    public var drainBound: Duration { .milliseconds(settings.effectiveDeliveryTimeoutMs) }

    /// Binds the listen address and starts serving.
    /// - Throws: `ServiceStartupError` when the address cannot be bound (the caller closes `parts`).
    public func start() throws(ServiceStartupError) {
        do {
            try startServing()
        } catch {
            throw ServiceStartupError("cannot start the HTTP server: \(error)")
        }
    }

    private func startServing() throws {
        if let resultFeed {
            let results = self.results
            let logger = self.logger
            resultFeed.start { message in
                // On the feed's thread: index (completing waiting requests), never crash on a bad message.
                if results.record(value: message.value, timestampMs: message.timestampMs) == .undecodable {
                    // Ids only: the header's submission id (when there is one), where the message is, its size.
                    let id = message.headers.value(named: MessageHeaders.submissionId)
                        .map { String(decoding: $0.prefix(256), as: UTF8.self) } ?? ""
                    logger.warning(
                        "result message not understood; not indexed",
                        ["topic": .string(message.topic), "partition": .int(Int(message.partition)),
                         "offset": .int(Int(message.offset)), "bytes": .int(message.value.count),
                         "submission_id": .string(id)])
                }
            }
        }
        try server.start()
        if settings.apiKeys.isEmpty {
            logger.warning("INGEST_API_KEYS is empty: POST /v1/receipts accepts requests without authentication")
        } else if settings.apiKeys.contains(where: { $0.name != nil }),
            settings.apiKeys.contains(where: { $0.name == nil })
        {
            logger.warning(
                "INGEST_API_KEYS mixes named and unnamed keys: the unnamed keys see every client's results")
        }
        logger.info(
            "receipt-ingest started",
            ["listen": .string(settings.listen.host), "port": .int(Int(server.port)),
             "topic": .string(settings.receiptsTopic), "api_keys": .int(settings.apiKeys.count),
             "named_api_keys": .int(settings.apiKeys.filter { $0.name != nil }.count),
             "proof_limited_key_names": .int(settings.keyProofs.allowedByName.count),
             "notifications_topic": .string(settings.notificationsTopic),
             "max_buffered_bytes": .int(settings.maxBufferedBytes),
             "max_body_bytes": .int(settings.maxBodyBytes),
             "max_connections": .int(settings.maxConnections),
             "max_connections_per_ip": .int(settings.maxConnectionsPerIP),
             "header_timeout_seconds": .int(settings.headerTimeoutSeconds),
             "body_timeout_seconds": .int(settings.bodyTimeoutSeconds),
             "idle_timeout_seconds": .int(settings.idleTimeoutSeconds),
             "max_header_bytes": .int(settings.maxHeaderBytes),
             "delivery_timeout_ms": .int(settings.effectiveDeliveryTimeoutMs),
             "results_topic": .string(settings.resultsTopic), "max_wait_ms": .int(settings.maxWaitMs)])
    }

    /// The bound HTTP port.
    public var port: UInt16 { server.port }

    /// Stops accepting, answers requests waiting for a verdict 202, waits for the submissions still waiting on Kafka
    /// to be answered, flushes an owned producer (within `bound`), then closes the parts (the result feed, the owned
    /// producer); blocks. Idempotent. Returns false when an owned producer did not flush in time.
    @discardableResult
    public func drain(within bound: Duration) -> Bool {
        guard drainOnce.claim() else { return true }
        handler.isDraining.store(true, ordering: .relaxed)
        let waiting = server.requestsAwaitingResponse
        logger.info("draining: no new submissions", ["awaiting_response": .int(waiting)])
        results.stopWaiting()
        server.close()
        handler.kafkaDeadlines.cancel()
        let flushed = ownedProducer?.flush(timeout: bound)
        parts.closeAll()
        guard let flushed else { return true }
        logger.info("receipt-ingest stopped", ["flushed": .bool(flushed)])
        return flushed
    }
}

/// `ServiceMain` runs the ingest from these settings.
extension IngestSettings: ServiceSettings {}
