import Foundation
import ServiceSupport
import Synchronization

/// A Kafka producer: idempotent (acks=all) unless the configuration says otherwise, with per-message delivery
/// results served by the producer's own poll thread.
///
/// Lifecycle (`ClientLifecycle`): usable from `init` until `close`; `close` delivers (or fails) every outstanding
/// message, so every `completion` of an accepted `send` is called exactly once. Thread-safe: `send` may be called
/// from any thread. Every librdkafka call goes through `RDKafkaClient`.
public final class KafkaProducer: Sendable {
    /// Defaults applied for properties the configuration does not set. Idempotence gives acks=all, ordered retries
    /// and no duplicates from retries; linger and batch sizes trade ~5 ms of latency for throughput.
    public static let defaultProperties: [String: String] = [
        "enable.idempotence": "true",
        "linger.ms": "5",
        "batch.num.messages": "10000",
        "batch.size": "1000000",
        "queue.buffering.max.messages": "100000",
        "socket.nagle.disable": "true",
        "statistics.interval.ms": "1000",
    ]

    /// Everything the client owns, separate from this facade so that closing never needs `self` (deinit may run
    /// on any thread, including the poll thread when a completion held the last reference).
    private let core: ProducerCore
    private var context: RDKafkaCallbackContext { core.context }

    /// Creates the producer and starts its poll thread.
    /// - Throws: `KafkaError` (code `invalidArgument`) naming an unknown property or invalid value.
    public init(configuration: KafkaConfiguration, logger: Logger, metrics: MetricsRegistry? = nil) throws(KafkaError) {
        var defaults = Self.defaultProperties
        if let acks = configuration["acks"], !["all", "-1"].contains(acks), configuration["enable.idempotence"] == nil {
            // An explicit weaker acks setting means the owner chose not to be idempotent.
            defaults["enable.idempotence"] = "false"
        }
        let logger = logger.named(logger.label + ".kafka-producer")
        let statistics = KafkaStatisticsStore()
        let context = RDKafkaCallbackContext(logger: logger, statistics: statistics)
        let client = try RDKafkaClient.make(
            .producer, configuration: configuration.merged(withDefaults: defaults), context: context,
            closedError: Self.closedError)
        let events = ProducerEvents(logger: logger, statistics: statistics)
        context.attach(events)
        self.core = ProducerCore(client: client, context: context, events: events, logger: logger)
        core.start()
        if let metrics { registerMetrics(metrics) }
    }

    deinit {
        core.close(timeout: .seconds(5))
    }

    /// Enqueues a message without blocking.
    ///
    /// - Parameters:
    ///   - key: nil for no key (the partitioner then spreads messages); equal keys go to the same partition.
    ///   - completion: called exactly once, on the poll thread (the last ones during `close` on the closing
    ///     thread), with where the message was written or why it could not be (after retries, within
    ///     `message.timeout.ms`, librdkafka's default 300 s). Keep it short: it delays other delivery reports.
    /// - Throws: `KafkaError` synchronously when librdkafka refuses the message (`isQueueFull` is back-pressure:
    ///   retry later; unknown topic, message too large, producer closed); `completion` is then never called.
    public func send(
        topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader] = [],
        completion: @escaping @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void
    ) throws(KafkaError) {
        // Refused from the moment close was asked (the client itself refuses once it is retired).
        guard let client = core.runtime.resourcesForNewWork else { throw Self.closedError }
        if let refusal = client.produce(
            topic: topic, key: key, value: value, headers: headers, completion: completion)
        {
            throw refusal
        }
    }

    /// Sends and waits for the delivery result (the broker's acknowledgement, with acks=all by default).
    /// - Throws: `KafkaError` when the message was refused or could not be delivered.
    public func send(topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader] = []) async throws(KafkaError)
        -> KafkaDeliveryReport
    {
        let result: Result<KafkaDeliveryReport, KafkaError> = await withCheckedContinuation { continuation in
            do throws(KafkaError) {
                try send(topic: topic, key: key, value: value, headers: headers) { continuation.resume(returning: $0) }
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        return try result.get()
    }

    /// Waits until every enqueued message was delivered or failed (and its completion ran), or `timeout` passed.
    /// Blocks the calling thread: do not call it from the Swift cooperative pool in a hot path, nor from a
    /// completion (the poll thread cannot serve reports while it waits; it then returns false at the deadline).
    /// - Returns: true when nothing is outstanding.
    @discardableResult
    public func flush(timeout: Duration) -> Bool {
        core.flush(timeout: timeout)
    }

    /// Refuses new messages, flushes for up to `timeout`, fails what is still queued (completions get
    /// `purgedQueue` / `purgedInFlight`), stops the poll thread and destroys the client. Idempotent; later calls return
    /// at once. Called from a completion (the poll thread), it returns at once and closes on another thread.
    public func close(timeout: Duration) {
        core.close(timeout: timeout)
    }

    /// True when some broker connection is up (from statistics, refreshed every `statistics.interval.ms`; false
    /// as soon as librdkafka reports all brokers down). For `/readyz`.
    public var isConnected: Bool { core.events.isConnected }

    /// `rd_kafka_outq_len`: messages enqueued and not yet delivered or failed, delivery reports not yet served, and
    /// other librdkafka events waiting for the poll thread (so it can exceed the number of messages briefly).
    public var outstandingMessages: Int { core.outstandingMessages }

    /// The latest decoded statistics, if any arrived yet.
    public var statistics: KafkaStatistics? { context.statistics.current }

    fileprivate static let closedError = KafkaError(code: KafkaErrorCode.destroyed, message: "the Kafka producer is closed")

    private func registerMetrics(_ metrics: MetricsRegistry) {
        let core = self.core
        let events = core.events
        metrics.collect(
            "kafka_producer_queue_messages", help: "Messages produced and not yet delivered or failed", kind: .gauge
        ) {
            [([], Double(core.outstandingMessages))]
        }
        metrics.collect("kafka_producer_connected", help: "1 when a broker connection is up", kind: .gauge) {
            [([], events.isConnected ? 1 : 0)]
        }
    }
}

/// The producer's client (under its lifecycle), poll thread and close sequence: everything but the facade, so that
/// closing never needs the facade (its deinit may run on any thread, also the poll thread when a completion held
/// the last reference).
final class ProducerCore: PolledClientOwner {
    let runtime: ClientRuntime<RDKafkaClient>
    let context: RDKafkaCallbackContext
    let events: ProducerEvents
    private let logger: Logger

    init(client: RDKafkaClient, context: RDKafkaCallbackContext, events: ProducerEvents, logger: Logger) {
        self.runtime = ClientRuntime(client, threadName: "kafka-producer-poll", drainsBeforeStopping: true)
        self.context = context
        self.events = events
        self.logger = logger
    }

    func start() {
        runtime.start(self)
    }

    var outstandingMessages: Int {
        runtime.resources?.outstandingCount ?? 0
    }

    func flush(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while outstandingMessages > 0 {
            if ContinuousClock.now >= deadline { return false }
            usleep(1000)
        }
        return true
    }

    /// Refuses new messages, drains, stops the poll thread (which then closes the client). The first call decides;
    /// later ones return at once. From the poll thread it returns at once and closes on another thread.
    func close(timeout: Duration) {
        runtime.close(self, timeout: timeout)
    }

    // MARK: PolledClientOwner

    func pollOnce(_ client: RDKafkaClient) {
        // Serves delivery reports, statistics and errors; returns as soon as there is something to serve.
        client.poll(timeoutMs: 100)
    }

    func drain(_ client: RDKafkaClient, timeout: Duration) {
        guard !flush(timeout: timeout) else { return }
        logger.warning(
            "producer close: messages not delivered in time are failed", ["outstanding": .int(outstandingMessages)])
        client.purge()
        _ = flush(timeout: .seconds(2))
    }

    /// On the poll thread after its loop: librdkafka's destroy drops queued messages without delivery reports
    /// (their completions would never run and their contexts would leak), so what is left is purged and its
    /// reports served here first.
    func closeClient(_ client: RDKafkaClient) {
        guard client.retire() else { return }
        client.purgeAndServeRemaining()
        client.destroy()
    }

    func pollThreadWait(closeTimeout: Duration) -> Duration { .seconds(5) }

    func closeDidTimeOut() {
        logger.error(
            "producer close: poll thread did not stop (a delivery completion is blocking); it closes the client once "
                + "the completion returns")
    }
}

/// Receives the producer's librdkafka events and keeps the connection state.
final class ProducerEvents: RDKafkaClientEvents {
    private let logger: Logger
    private let statistics: KafkaStatisticsStore
    private let allBrokersDown = Atomic<Bool>(false)

    init(logger: Logger, statistics: KafkaStatisticsStore) {
        self.logger = logger
        self.statistics = statistics
    }

    var isConnected: Bool {
        guard let current = statistics.current else { return false }
        if allBrokersDown.load(ordering: .relaxed) {
            // Cleared by the next statistics that see a broker up.
            guard current.brokersUp > 0, statistics.updatedAfterMark else { return false }
            allBrokersDown.store(false, ordering: .relaxed)
        }
        return current.brokersUp > 0
    }

    package func rdKafkaDidReport(_ error: KafkaError) {
        if error.code == KafkaErrorCode.allBrokersDown {
            allBrokersDown.store(true, ordering: .relaxed)
            statistics.mark()
        }
        if error.isFatal {
            logger.error("Kafka producer fatal error", ["code": .int(Int(error.code.rawValue)), "error": .string(error.message)])
        } else {
            logger.warning("Kafka producer error", ["code": .int(Int(error.code.rawValue)), "error": .string(error.message)])
        }
    }
}
