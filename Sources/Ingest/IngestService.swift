import Foundation
import HTTPServer
import Kafka
import ServiceSupport

/// The ingest service: the HTTP API in front of a `SubmissionPublisher`. Testable in-process with a fake publisher
/// and port 0; `receipt-ingest` runs it with a `KafkaProducer`.
///
/// Lifecycle: `start()` binds; `drain()` stops accepting, waits for every submission still waiting on Kafka (up to
/// the delivery timeout) and closes the listener. The owner closes the publisher afterwards.
public final class IngestService: Sendable {
    public let settings: IngestSettings
    private let handler: IngestHandler
    private let server: HTTPServer
    private let logger: Logger

    public init(
        settings: IngestSettings, publisher: any SubmissionPublisher, logger: Logger, metrics: MetricsRegistry
    ) {
        let ingestMetrics = IngestMetrics(registry: metrics)
        let handler = IngestHandler(settings: settings, publisher: publisher, metrics: ingestMetrics, logger: logger)
        var configuration = HTTPServerConfiguration(listen: settings.listen)
        configuration.maxBodyBytes = settings.maxBodyBytes
        configuration.threadCount = settings.httpThreads
        configuration.connectionLimit = settings.maxConnections
        configuration.perIPConnectionLimit = settings.maxConnectionsPerIP
        configuration.idleTimeoutSeconds = settings.idleTimeoutSeconds
        // librdkafka normally reports a timeout itself at message.timeout.ms (= the delivery timeout by default);
        // the server's deadline guarantees the answer even if it does not.
        configuration.responseDeadline = .milliseconds(settings.deliveryTimeoutMs)
        configuration.deadlineResponse = APIError.kafkaTimeout(
            retryAfter: settings.retryAfterSeconds, timeoutMs: settings.deliveryTimeoutMs
        ).response
        configuration.stopGracePeriod = .milliseconds(settings.deliveryTimeoutMs + 1000)
        self.settings = settings
        self.handler = handler
        self.logger = logger
        self.server = HTTPServer(
            configuration: configuration, handler: handler, logger: logger.named(logger.label + ".http"),
            onResponse: { ingestMetrics.record($0) })
    }

    /// Binds the listen address and starts serving.
    /// - Throws: `HTTPServerError` when the address cannot be bound.
    public func start() throws {
        try server.start()
        if settings.apiKeys.isEmpty {
            logger.warning("INGEST_API_KEYS is empty: POST /v1/receipts accepts requests without authentication")
        }
        logger.info(
            "receipt-ingest started",
            ["listen": .string(settings.listen.host), "port": .int(Int(server.port)),
             "topic": .string(settings.receiptsTopic), "api_keys": .int(settings.apiKeys.count),
             "max_body_bytes": .int(settings.maxBodyBytes), "delivery_timeout_ms": .int(settings.deliveryTimeoutMs)])
    }

    /// The bound HTTP port.
    public var port: UInt16 { server.port }

    /// Stops accepting and waits for the submissions still waiting on Kafka to be answered; blocks. Idempotent.
    public func drain() {
        handler.isDraining.store(true, ordering: .relaxed)
        let waiting = server.requestsAwaitingResponse
        logger.info("draining: no new submissions", ["waiting_for_kafka": .int(waiting)])
        server.stop()
    }
}
