import Foundation
import ServiceSupport
import Synchronization

/// A group-less reader of every partition of one topic from a chosen start (for example the ingest's index of
/// results, or `receipt-tail`). No consumer group: nothing is committed and every follower sees every message.
///
/// Partitions are looked up in the topic's metadata when the follower starts and re-checked periodically, so
/// partitions added later (or a topic created after the follower started) are followed too. Messages are handed to
/// `onMessage` on the follower's own poll thread, in offset order per partition.
///
/// Catching up: the follower records each initial partition's high watermark when it assigns it and is caught up
/// (`isCaughtUp`, `onCaughtUp`) once its position in every one of them reached that watermark: everything written
/// before the start has then been read (see `FollowerCatchUp`).
public final class KafkaTopicFollower: Sendable {
    public let topic: String
    /// The client (held by the lifecycle state while it may be used) and the poll thread.
    private let runtime: ClientRuntime<RDKafkaClient>
    /// The callback context holds its target weakly: the follower keeps it alive, or librdkafka's errors go unlogged.
    private let events: FollowerEvents
    private let startPosition: FollowerStart
    private let onMessage: @Sendable (KafkaMessage) -> Void
    private let onCaughtUp: (@Sendable () -> Void)?
    /// Fed by the poll thread only (the lock is uncontended); read through `caughtUp` by everyone else.
    private let catchUp = Locked(FollowerCatchUp())
    private let caughtUp = Atomic<Bool>(false)
    /// When the poll thread last asked librdkafka for its positions while catching up (poll thread only).
    private let lastPositionCheck = Locked<ContinuousClock.Instant>(.now)
    private let followed = Locked(Followed())

    private struct Followed {
        var partitions: Set<Int32> = []
        /// Learned from the first metadata answer: nil until then, false when the topic did not exist.
        var topicExistedAtStart: Bool?
    }
    private let nextRefresh = Locked<ContinuousClock.Instant>(.now)
    private let logger: Logger
    /// How often partitions are re-checked once some are followed (sooner while none are).
    private let refreshInterval: Duration

    /// - Parameters:
    ///   - startingAtTimestampMs: where to start in every partition: the first message at or after this time
    ///     (`0` = from the beginning), or the end (only new messages) when nil. Times are looked up with
    ///     `rd_kafka_offsets_for_times`; note that librdkafka 2.0.2's mock cluster (`embedded-kafka`) answers such
    ///     lookups with the end offset, so against it only `0` and nil behave as on a real broker (use
    ///     `FollowerStart.recent` to read recent messages on every Kafka).
    ///   - onMessage: called on the follower's poll thread; keep it short.
    /// - Throws: `KafkaError` (`invalidArgument`) naming an unknown property or invalid value.
    public convenience init(
        configuration: KafkaConfiguration, topic: String, startingAtTimestampMs: Int64?, logger: Logger,
        refreshInterval: Duration = .seconds(10), onMessage: @escaping @Sendable (KafkaMessage) -> Void
    ) throws(KafkaError) {
        try self.init(
            configuration: configuration, topic: topic, start: FollowerStart(timestampMs: startingAtTimestampMs),
            logger: logger, refreshInterval: refreshInterval, onMessage: onMessage)
    }

    /// - Parameters:
    ///   - start: where to begin in each partition that exists at the start.
    ///   - onCaughtUp: called once, on the poll thread, when everything written before the start was read.
    ///   - onMessage: called on the follower's poll thread; keep it short.
    /// - Throws: `KafkaError` (`invalidArgument`) naming an unknown property or invalid value.
    public init(
        configuration: KafkaConfiguration, topic: String, start: FollowerStart, logger: Logger,
        refreshInterval: Duration = .seconds(10), onCaughtUp: (@Sendable () -> Void)? = nil,
        onMessage: @escaping @Sendable (KafkaMessage) -> Void
    ) throws(KafkaError) {
        guard !topic.isEmpty else {
            throw KafkaError(code: KafkaErrorCode.invalidArgument, message: "a topic follower needs a topic name")
        }
        var effective = configuration.merged(withDefaults: [
            "enable.partition.eof": "false", "socket.nagle.disable": "true", "statistics.interval.ms": "0",
            // Following must not create the topic (librdkafka otherwise lets metadata lookups auto-create it).
            "allow.auto.create.topics": "false",
            // A start offset that retention removed meanwhile continues at the oldest message kept (more messages,
            // never a silent jump to the end).
            "auto.offset.reset": "earliest",
        ])
        // A group id is needed for rd_kafka_consumer_poll; the follower never joins the group or commits.
        effective["group.id"] = "follower-\(topic)-\(UInt64.random(in: 0...UInt64.max))"
        effective["enable.auto.commit"] = "false"
        effective["enable.auto.offset.store"] = "false"
        let logger = logger.named(logger.label + ".kafka-follower").with(["topic": .string(topic)])
        let context = RDKafkaCallbackContext(logger: logger, statistics: KafkaStatisticsStore())
        let client = try RDKafkaClient.make(
            .consumer, configuration: effective, context: context,
            closedError: KafkaError(code: KafkaErrorCode.invalidArgument, message: "the follower is closed"))
        self.runtime = ClientRuntime(client, threadName: "kafka-follower-poll")
        self.topic = topic
        self.startPosition = start
        self.onMessage = onMessage
        self.onCaughtUp = onCaughtUp
        self.logger = logger
        self.refreshInterval = refreshInterval
        let events = FollowerEvents(logger: logger)
        self.events = events
        context.attach(events)
    }

    /// Starts following (the poll thread). Later calls do nothing.
    public func start() {
        runtime.start(self)
    }

    /// Stops following and destroys the client, waiting at most `timeout`. Idempotent. From `onMessage` it
    /// returns at once (the client closes as soon as the callback returned).
    public func close(timeout: Duration) {
        runtime.close(self, timeout: timeout)
    }

    /// The partitions being followed.
    public var partitions: [Int32] { followed.withLock { $0.partitions.sorted() } }

    /// True once every message written to the topic before the start has been read (handed to `onMessage`, or
    /// skipped as older than a `recent` start's time): every partition that existed at the start was read up to its
    /// high watermark of that moment. Also true when the topic did not exist at the start. Never turns false again.
    public var isCaughtUp: Bool { caughtUp.load(ordering: .acquiring) }

    /// The low and high watermarks (first offset still stored, next offset to be written) of every followed
    /// partition, asked of the brokers now. A reader that has seen offset `high - 1` of every partition (or whose
    /// partition has `low == high`) has read everything written before this call. Blocks up to `timeout` per
    /// partition: call it from a thread of your own, never from `onMessage`.
    /// - Throws: `KafkaError` when a partition's watermarks cannot be had.
    public func watermarks(timeout: Duration = .seconds(5)) throws(KafkaError) -> [Int32: (low: Int64, high: Int64)] {
        var result: [Int32: (low: Int64, high: Int64)] = [:]
        for partition in partitions {
            // The client's read lock keeps a concurrent close from destroying it mid-call.
            let answer = runtime.resources?.watermarks(topic: topic, partition: partition, timeout: timeout)
            guard let answer else {
                throw KafkaError(
                    code: KafkaErrorCode.invalidArgument, message: "watermarks of \(topic): the follower is closed")
            }
            switch answer {
            case .success(let marks): result[partition] = marks
            case .failure(let error):
                throw KafkaError(code: error.code, message: "watermarks of \(topic)/\(partition): \(error.message)")
            }
        }
        return result
    }

    /// One round of the poll loop (poll thread only).
    func pollOnce(_ client: RDKafkaClient) {
        // Only the poll thread touches nextRefresh; the lock is uncontended.
        if nextRefresh.withLock({ ContinuousClock.now >= $0 }) {
            let anyFollowed = refreshPartitions(client)
            let next = ContinuousClock.now + (anyFollowed ? refreshInterval : .seconds(1))
            nextRefresh.withLock { $0 = next }
        }
        let message: KafkaMessage
        switch client.consumerPoll(timeoutMs: 100) {
        case nil:
            if !caughtUp.load(ordering: .relaxed) { checkPositions(client) }
            return
        case .error(let error)?:
            logger.warning("follower error", ["error": .string(KafkaError.describe(code: error.code))])
            return
        case .message(let received)?:
            message = received
        }
        if caughtUp.load(ordering: .relaxed) {
            onMessage(message)
            return
        }
        // Catching up: skip read-back messages older than a `recent` start's time, and record the position.
        let partition = message.partition
        let offset = message.offset
        var skip = false
        if case .recent(_, let notBeforeMs?) = startPosition, let timestamp = message.timestampMs {
            skip = timestamp < notBeforeMs && catchUp.withLock { $0.isReadBack(partition: partition, offset: offset) }
        }
        if !skip { onMessage(message) }
        if catchUp.withLock({ $0.reached(partition: partition, nextOffset: offset + 1) }) { becameCaughtUp() }
    }

    /// While catching up and idle: asks librdkafka for the positions of the partitions not reached yet (a position
    /// may pass a watermark without a message: control records, compaction, retention), and looks up targets that
    /// were unknown. At most every 250 ms.
    private func checkPositions(_ client: RDKafkaClient) {
        let now = ContinuousClock.now
        let due = lastPositionCheck.withLock { last in
            guard now - last >= .milliseconds(250) else { return false }
            last = now
            return true
        }
        guard due else { return }
        let remaining = catchUp.withLock { $0.remaining }
        guard !remaining.isEmpty else { return }
        var became = false
        for (partition, target) in remaining where target == nil {
            if let marks = watermarks(of: partition, client: client) {
                catchUp.withLock { $0.learnedTarget(partition: partition, target: marks.high) }
                // A partition holding nothing has nothing to read back, wherever it started (and no position).
                if marks.low >= marks.high {
                    became = catchUp.withLock { $0.reached(partition: partition, nextOffset: marks.high) } || became
                }
            }
        }
        let list = remaining.keys.sorted().map { TopicPartition(topic: topic, partition: $0) }
        let positions = client.positions(list).map { ($0.key.partition, $0.value) }
        for (partition, position) in positions {
            became = catchUp.withLock { $0.reached(partition: partition, nextOffset: position) } || became
        }
        if became { becameCaughtUp() }
    }

    private func becameCaughtUp() {
        caughtUp.store(true, ordering: .releasing)
        logger.info("caught up with the messages written before the start", ["partitions": .int(partitions.count)])
        onCaughtUp?()
    }

    /// Adds partitions not followed yet. Returns whether any partition is followed.
    ///
    /// The partitions that exist when the follower starts begin where the caller asked, and their high watermarks
    /// become the catch-up targets. Partitions that appear later (added to the topic, or the whole topic created
    /// after the follower started) begin at their beginning: all of their messages were written after the follower
    /// started looking.
    private func refreshPartitions(_ client: RDKafkaClient) -> Bool {
        let (known, topicExistedAtStart) = followed.withLock { ($0.partitions, $0.topicExistedAtStart) }
        let current: [Int32]
        switch client.partitionIds(of: topic, timeout: .seconds(2)) {
        case .success(let partitions):
            current = partitions
        case .failure(let error):
            if topicExistedAtStart == nil,
                error.code == KafkaErrorCode.unknownTopicOrPartition || error.code == KafkaErrorCode.unknownTopic
            {
                followed.withLock { $0.topicExistedAtStart = false }
                if catchUp.withLock({ $0.topicAbsentAtStart() }) { becameCaughtUp() }
            }
            logger.debug("topic metadata not available yet", ["error": .string(error.message)])
            return !known.isEmpty
        }
        let added = current.filter { !known.contains($0) }.sorted()
        guard !added.isEmpty else { return !known.isEmpty }
        let isInitial = known.isEmpty && topicExistedAtStart != false
        let placement: [(start: Int64, target: Int64?)]
        if isInitial {
            placement = initialPlacement(added, client: client)
        } else {
            placement = added.map { _ in (RDKafkaClient.offsetBeginning, nil) }
        }
        let partitions = added.map { TopicPartition(topic: topic, partition: $0) }
        if let failure = client.incrementalAssign(
            partitions, offsets: placement.map(\.start), context: "incremental assign")
        {
            logger.warning("cannot follow partitions", ["error": .string(failure.message)])
            return !known.isEmpty
        }
        followed.withLock {
            $0.partitions.formUnion(added)
            if $0.topicExistedAtStart == nil { $0.topicExistedAtStart = true }
        }
        if isInitial {
            let entries = zip(added, placement).map { (partition: $0, start: $1.start, target: $1.target) }
            if catchUp.withLock({ $0.initialAssignment(entries) }) { becameCaughtUp() }
        }
        logger.info(
            "following partitions",
            ["partitions": .string(added.map(String.init).joined(separator: ",")), "initial": .bool(isInitial)])
        return true
    }

    /// Where each initial partition starts, and its high watermark now (the catch-up target; nil when the
    /// watermarks could not be had). Symbolic starts (beginning, end) are resolved from the watermarks when known,
    /// so "from the end" means messages written after this moment, not after librdkafka resolves it later.
    private func initialPlacement(_ partitions: [Int32], client: RDKafkaClient) -> [(start: Int64, target: Int64?)] {
        let marks = partitions.map { watermarks(of: $0, client: client) }
        switch startPosition {
        case .end:
            return marks.map { mark in (mark?.high ?? RDKafkaClient.offsetEnd, mark?.high) }
        case .beginning:
            // The low watermark, not the symbolic beginning: an empty partition (low = high) is then reached at
            // once. Nothing would reach it otherwise: no message arrives, and librdkafka reports no position for a
            // partition it has not fetched from. (Retention moving `low` meanwhile continues at the oldest message.)
            return marks.map { mark in (mark?.low ?? RDKafkaClient.offsetBeginning, mark?.high) }
        case .timestamp(let time):
            let starts = startOffsets(partitions, atTimestampMs: time, client: client)
            return zip(starts, marks).map { start, mark in
                (start == RDKafkaClient.offsetEnd ? (mark?.high ?? start) : start, mark?.high)
            }
        case .recent(let messages, _):
            let share = FollowerStart.share(of: messages, partitions: partitions.count)
            return marks.map { mark in
                guard let mark else {
                    // Unknown watermarks: the beginning reads more than asked, never less.
                    logger.warning("watermarks unknown; reading the partition from its beginning")
                    return (RDKafkaClient.offsetBeginning, nil)
                }
                return (max(mark.low, mark.high - share), mark.high)
            }
        }
    }

    /// A partition's low and high watermarks now, or nil when the brokers did not answer.
    private func watermarks(of partition: Int32, client: RDKafkaClient) -> (low: Int64, high: Int64)? {
        let answer = client.watermarks(topic: topic, partition: partition, timeout: .seconds(5))
        guard case .success(let marks)? = answer, marks.low >= 0, marks.high >= 0 else {
            let code: KafkaErrorCode = if case .failure(let error)? = answer { error.code } else { .noError }
            logger.warning(
                "watermark lookup failed",
                ["partition": .int(Int(partition)), "error": .string(KafkaError.describe(code: code))])
            return nil
        }
        return marks
    }

    /// The first offset at or after `timestamp` per partition (`OFFSET_END` where there is none). When the lookup
    /// fails the partition starts at the beginning (more messages, never fewer).
    private func startOffsets(_ partitions: [Int32], atTimestampMs timestamp: Int64, client: RDKafkaClient)
        -> [Int64]
    {
        let list = partitions.map { TopicPartition(topic: topic, partition: $0) }
        let answer = client.offsetsForTimes(list, timestampMs: timestamp, timeout: .seconds(5))
        return list.map { partition in
            let offset: Int64?
            let code: KafkaErrorCode
            switch answer {
            case .success(let offsets): (offset, code) = (offsets[partition], .noError)
            case .failure(let error): (offset, code) = (nil, error.code)
            }
            guard let offset else {
                logger.warning(
                    "offset lookup by time failed; starting at the beginning",
                    ["partition": .int(Int(partition.partition)), "error": .string(KafkaError.describe(code: code))])
                return RDKafkaClient.offsetBeginning
            }
            // -1 means no message at or after the timestamp: the end.
            return offset < 0 ? RDKafkaClient.offsetEnd : offset
        }
    }
}

extension KafkaTopicFollower: PolledClientOwner {
    func closeClient(_ client: RDKafkaClient) {
        if client.retire() {
            client.destroy()
        }
    }

    func closeDidTimeOut() {
        logger.warning("topic follower close did not finish in time; continuing in the background")
    }
}

/// Logs the follower's librdkafka errors (it has no delegate).
final class FollowerEvents: RDKafkaClientEvents {
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    package func rdKafkaDidReport(_ error: KafkaError) {
        logger.warning("Kafka follower error", ["code": .int(Int(error.code.rawValue)), "error": .string(error.message)])
    }
}
