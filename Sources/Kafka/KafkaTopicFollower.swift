import CRdKafka
import Foundation
import ServiceSupport
import Synchronization

/// A group-less reader of every partition of one topic from a point in time (for example the ingest's index of
/// results, or `receipt-tail`). No consumer group: nothing is committed and every follower sees every message.
///
/// Partitions are looked up in the topic's metadata when the follower starts and re-checked periodically, so
/// partitions added later (or a topic created after the follower started) are followed too. Messages are handed to
/// `onMessage` on the follower's own poll thread, in offset order per partition.
public final class KafkaTopicFollower: Sendable {
    public let topic: String
    private let handle: RDKafkaHandle
    /// The callback context holds its target weakly: the follower keeps it alive, or librdkafka's errors go unlogged.
    private let events: FollowerEvents
    private let startingAtTimestampMs: Int64?
    private let onMessage: @Sendable (KafkaMessage) -> Void
    private let pollThread = PollThread(name: "kafka-follower-poll")
    private let lifecycle = Mutex<Bool>(false)
    private let followed = Mutex(Followed())

    private struct Followed {
        var partitions: Set<Int32> = []
        /// Learned from the first metadata answer: nil until then, false when the topic did not exist.
        var topicExistedAtStart: Bool?
    }
    private let nextRefresh = Mutex<ContinuousClock.Instant>(.now)
    private let logger: Logger
    /// How often partitions are re-checked once some are followed (sooner while none are).
    private let refreshInterval: Duration

    /// - Parameters:
    ///   - startingAtTimestampMs: where to start in every partition: the first message at or after this time
    ///     (`0` = from the beginning), or the end (only new messages) when nil. Times are looked up with
    ///     `rd_kafka_offsets_for_times`; note that librdkafka 2.0.2's mock cluster (`embedded-kafka`) answers such
    ///     lookups with the end offset, so against it only `0` and nil behave as on a real broker.
    ///   - onMessage: called on the follower's poll thread; keep it short.
    /// - Throws: `KafkaError` (`invalidArgument`) naming an unknown property or invalid value.
    public init(
        configuration: KafkaConfiguration, topic: String, startingAtTimestampMs: Int64?, logger: Logger,
        refreshInterval: Duration = .seconds(10), onMessage: @escaping @Sendable (KafkaMessage) -> Void
    ) throws(KafkaError) {
        guard !topic.isEmpty else {
            throw KafkaError(code: KafkaError.invalidArgument, message: "a topic follower needs a topic name")
        }
        var effective = configuration.merged(withDefaults: [
            "enable.partition.eof": "false", "socket.nagle.disable": "true", "statistics.interval.ms": "0",
            // Following must not create the topic (librdkafka otherwise lets metadata lookups auto-create it).
            "allow.auto.create.topics": "false",
        ])
        // A group id is needed for rd_kafka_consumer_poll; the follower never joins the group or commits.
        effective["group.id"] = "follower-\(topic)-\(UInt64.random(in: 0...UInt64.max))"
        effective["enable.auto.commit"] = "false"
        effective["enable.auto.offset.store"] = "false"
        let logger = logger.named(logger.label + ".kafka-follower").with(["topic": .string(topic)])
        let context = RDKafkaCallbackContext(logger: logger, statistics: KafkaStatisticsStore())
        self.handle = try RDKafkaClient.make(.consumer, configuration: effective, context: context)
        rd_kafka_poll_set_consumer(handle.pointer)
        self.topic = topic
        self.startingAtTimestampMs = startingAtTimestampMs
        self.onMessage = onMessage
        self.logger = logger
        self.refreshInterval = refreshInterval
        let events = FollowerEvents(logger: logger)
        self.events = events
        context.attach(events)
    }

    /// Starts following (the poll thread). Later calls do nothing.
    public func start() {
        let isFirst = lifecycle.withLock { started in
            defer { started = true }
            return !started
        }
        guard isFirst else { return }
        pollThread.start(
            poll: { [self] in
                // Only the poll thread touches nextRefresh; the Mutex is uncontended.
                if nextRefresh.withLock({ ContinuousClock.now >= $0 }) {
                    let anyFollowed = refreshPartitions()
                    let next = ContinuousClock.now + (anyFollowed ? refreshInterval : .seconds(1))
                    nextRefresh.withLock { $0 = next }
                }
                pollOnce()
            },
            finish: { [self] in destroy() })
    }

    /// Stops following and destroys the client, waiting at most `timeout`. Idempotent.
    public func close(timeout: Duration) {
        let neverStarted = lifecycle.withLock { started in
            defer { started = true }
            return !started
        }
        if neverStarted {
            pollThread.start(poll: {}, finish: { [self] in destroy() })
        }
        pollThread.requestStop()
        guard !pollThread.isCurrentThread else { return }  // from onMessage: closes once it returns
        if !pollThread.wait(timeout: timeout) {
            logger.warning("topic follower close did not finish in time; continuing in the background")
        }
    }

    deinit {
        // Only reached when never started (the poll thread keeps a started follower alive until it closed).
        if handle.retire() {
            handle.destroy()
        }
    }

    /// The partitions being followed.
    public var partitions: [Int32] { followed.withLock { $0.partitions.sorted() } }

    /// The low and high watermarks (first offset still stored, next offset to be written) of every followed
    /// partition, asked of the brokers now. A reader that has seen offset `high - 1` of every partition (or whose
    /// partition has `low == high`) has read everything written before this call. Blocks up to `timeout` per
    /// partition: call it from a thread of your own, never from `onMessage`.
    /// - Throws: `KafkaError` when a partition's watermarks cannot be had.
    public func watermarks(timeout: Duration = .seconds(5)) throws(KafkaError) -> [Int32: (low: Int64, high: Int64)] {
        let timeoutMs = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        var result: [Int32: (low: Int64, high: Int64)] = [:]
        for partition in partitions {
            var low: Int64 = 0
            var high: Int64 = 0
            // Under the handle's read lock: a concurrent close cannot destroy the client mid-call.
            let answer = handle.withClient { client in
                rd_kafka_query_watermark_offsets(client, topic, partition, &low, &high, timeoutMs)
            }
            guard let code = answer else {
                throw KafkaError(code: KafkaError.invalidArgument, message: "watermarks of \(topic): the follower is closed")
            }
            guard code == RD_KAFKA_RESP_ERR_NO_ERROR else {
                throw KafkaError(code: code.rawValue, message: "watermarks of \(topic)/\(partition): \(KafkaError.describe(code: code.rawValue))")
            }
            result[partition] = (low, high)
        }
        return result
    }

    private func pollOnce() {
        guard let message = rd_kafka_consumer_poll(handle.pointer, 100) else { return }
        defer { rd_kafka_message_destroy(message) }
        let code = message.pointee.err
        if code == RD_KAFKA_RESP_ERR_NO_ERROR {
            onMessage(RDKafkaMessageReader.read(message))
        } else if code != RD_KAFKA_RESP_ERR__PARTITION_EOF {
            logger.warning("follower error", ["error": .string(KafkaError.describe(code: code.rawValue))])
        }
    }

    private func destroy() {
        if handle.retire() {
            handle.destroy()
        }
    }

    /// Adds partitions not followed yet. Returns whether any partition is followed.
    ///
    /// The partitions that exist when the follower starts begin where the caller asked. Partitions that appear later
    /// (added to the topic, or the whole topic created after the follower started) begin at their beginning: all of
    /// their messages were written after the follower started looking.
    private func refreshPartitions() -> Bool {
        let client = handle.pointer
        let (known, topicExistedAtStart) = followed.withLock { ($0.partitions, $0.topicExistedAtStart) }
        let current: [Int32]
        switch RDKafkaMetadata.partitions(of: topic, client: client, timeout: .seconds(2)) {
        case .success(let partitions):
            current = partitions
        case .failure(let error):
            if topicExistedAtStart == nil,
                error.code == KafkaError.unknownTopicOrPartition || error.code == KafkaError.unknownTopic
            {
                followed.withLock { $0.topicExistedAtStart = false }
            }
            logger.debug("topic metadata not available yet", ["error": .string(error.message)])
            return !known.isEmpty
        }
        let added = current.filter { !known.contains($0) }.sorted()
        guard !added.isEmpty else { return !known.isEmpty }
        let isInitial = known.isEmpty && topicExistedAtStart != false
        let offsets: [Int64]
        if !isInitial {
            offsets = added.map { _ in Int64(RD_KAFKA_OFFSET_BEGINNING) }
        } else if let startingAtTimestampMs {
            offsets = startOffsets(added, atTimestampMs: startingAtTimestampMs, client: client)
        } else {
            offsets = added.map { endOffset(of: $0, client: client) }
        }
        let partitions = added.map { TopicPartition(topic: topic, partition: $0) }
        let failure = RDKafkaTopicPartitionList.withList(partitions, offsets: offsets) { list in
            rd_kafka_incremental_assign(client, list)
        }
        if let failure {
            logger.warning(
                "cannot follow partitions",
                ["error": .string(KafkaError.consuming(failure, context: "incremental assign").message)])
            return !known.isEmpty
        }
        followed.withLock {
            $0.partitions.formUnion(added)
            if $0.topicExistedAtStart == nil { $0.topicExistedAtStart = true }
        }
        logger.info(
            "following partitions",
            ["partitions": .string(added.map(String.init).joined(separator: ",")), "initial": .bool(isInitial)])
        return true
    }

    /// The partition's high watermark now, so "from the end" means messages written after this moment (a symbolic
    /// `OFFSET_END` would be resolved later, skipping what arrives in between). Falls back to `OFFSET_END`.
    private func endOffset(of partition: Int32, client: OpaquePointer) -> Int64 {
        var low: Int64 = 0
        var high: Int64 = 0
        let code = rd_kafka_query_watermark_offsets(client, topic, partition, &low, &high, 5000)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR, high >= 0 else { return Int64(RD_KAFKA_OFFSET_END) }
        return high
    }

    /// The first offset at or after `timestamp` per partition (`OFFSET_END` where there is none). Timestamp 0 is
    /// the beginning. When the lookup fails the partition starts at the beginning (more messages, never fewer).
    private func startOffsets(_ partitions: [Int32], atTimestampMs timestamp: Int64, client: OpaquePointer) -> [Int64] {
        guard timestamp > 0 else { return partitions.map { _ in Int64(RD_KAFKA_OFFSET_BEGINNING) } }
        let list = partitions.map { TopicPartition(topic: topic, partition: $0) }
        return RDKafkaTopicPartitionList.withList(list, offsets: list.map { _ in timestamp }) { cList in
            let code = rd_kafka_offsets_for_times(client, cList, 5000)
            let entries = RDKafkaTopicPartitionList.entries(cList)
            return partitions.map { partition in
                guard code == RD_KAFKA_RESP_ERR_NO_ERROR,
                    let entry = entries.first(where: { $0.partition.partition == partition }),
                    entry.error == RD_KAFKA_RESP_ERR_NO_ERROR
                else {
                    logger.warning(
                        "offset lookup by time failed; starting at the beginning",
                        ["partition": .int(Int(partition)), "error": .string(KafkaError.describe(code: code.rawValue))])
                    return Int64(RD_KAFKA_OFFSET_BEGINNING)
                }
                // -1 means no message at or after the timestamp: the end.
                return entry.offset < 0 ? Int64(RD_KAFKA_OFFSET_END) : entry.offset
            }
        }
    }
}

/// Logs the follower's librdkafka errors (it has no delegate).
final class FollowerEvents: RDKafkaClientEvents {
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    func rdKafkaDidReport(_ error: KafkaError) {
        logger.warning("Kafka follower error", ["code": .int(Int(error.code)), "error": .string(error.message)])
    }
}
