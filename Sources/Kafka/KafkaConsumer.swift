import CRdKafka
import Foundation
import ServiceSupport
import Synchronization

/// A consumer-group member that hands every message to its delegate from a dedicated poll thread and leaves offset
/// storage to its owner.
///
/// - `enable.auto.offset.store=false` (always): an offset is committed only after the owner called `storeOffset`,
///   so the owner decides what is done (see `PartitionOffsetTracker`).
/// - `enable.auto.commit=true` (default): stored offsets are committed every `auto.commit.interval.ms`, when
///   partitions are revoked, and on `close`; `requestCommit` commits them sooner (asynchronously, at most once per
///   `commitInterval`), so a crash redoes little more than the work that was in flight.
/// - Eager `range` assignment by default; rebalances go through `rd_kafka_conf_set_rebalance_cb`, so the delegate
///   hears `willRevoke` before partitions are taken away and `didAssign` after they were assigned.
/// - `auto.offset.reset=earliest` by default: a new group starts at the beginning, nothing written before its first
///   start is skipped.
///
/// Lifecycle: `init` validates the configuration; `start` subscribes and starts polling; `close` leaves the group
/// (bounded) and destroys the client. The consumer stays alive until `close` even when its owner drops it.
public final class KafkaConsumer: Sendable {
    /// Defaults for properties the configuration does not set.
    public static let defaultProperties: [String: String] = [
        "enable.auto.commit": "true",
        "auto.commit.interval.ms": "1000",
        "partition.assignment.strategy": "range",
        "auto.offset.reset": "earliest",
        "enable.partition.eof": "false",
        "statistics.interval.ms": "5000",
        "socket.nagle.disable": "true",
    ]

    public let groupId: String
    public let topics: [String]
    private let handle: RDKafkaHandle
    private let context: RDKafkaCallbackContext
    private let delegateBox: Locked<(any KafkaConsumerDelegate)?>
    private let pollThread = PollThread(name: "kafka-consumer-poll")
    private let lifecycle = Locked<Lifecycle>(.created)
    private let assigned = Locked<Set<TopicPartition>>([])
    private let rebalances = Atomic<Int>(0)
    private let allBrokersDown = Atomic<Bool>(false)
    private let commitPacer: Locked<CommitPacer>
    private let commitRequests = Atomic<Int>(0)
    private let startingOffsets: StartingOffsets?
    private let logger: Logger

    /// Where assigned partitions start when their owner keeps its own offsets (in a database, written in the same
    /// transaction as the work): given the partitions being assigned, the next offset to read of each; a partition
    /// left out starts at its beginning. Called on the poll thread inside the assignment, before any message of
    /// those partitions is fetched (it may block, bounded, for example to reach its database).
    public typealias StartingOffsets = @Sendable ([TopicPartition]) -> [TopicPartition: Int64]

    private enum Lifecycle {
        case created, running, closing
    }

    /// - Parameters:
    ///   - configuration: librdkafka properties (`bootstrap.servers` at least); `group.id` and
    ///     `enable.auto.offset.store` are set by the consumer.
    ///   - delegate: held strongly until `close` finished.
    ///   - metrics: when given, exports `kafka_consumer_lag{topic,partition}`, `kafka_rebalances_total`,
    ///     `kafka_consumer_fetch_queue_messages`, `kafka_consumer_assigned_partitions` and
    ///     `kafka_consumer_commit_requests_total` (one consumer per registry).
    ///   - commitInterval: the least time between two commits `requestCommit` issues.
    ///   - startingOffsets: when given, assigned partitions start where it says, not at the group's committed
    ///     offsets (the committed offsets are then only what lag and monitoring see).
    /// - Throws: `KafkaError` (`invalidArgument`) naming an unknown property or invalid value, or when `topics` is
    ///   empty.
    public init(
        configuration: KafkaConfiguration, groupId: String, topics: [String], delegate: any KafkaConsumerDelegate,
        logger: Logger, metrics: MetricsRegistry? = nil, commitInterval: Duration = .milliseconds(100),
        startingOffsets: StartingOffsets? = nil
    ) throws(KafkaError) {
        guard !groupId.isEmpty, !topics.isEmpty, !topics.contains(where: \.isEmpty) else {
            throw KafkaError(
                code: KafkaError.invalidArgument, message: "a consumer needs a group id and at least one topic name")
        }
        var effective = configuration.merged(withDefaults: Self.defaultProperties)
        effective["group.id"] = groupId
        effective["enable.auto.offset.store"] = "false"
        let logger = logger.named(logger.label + ".kafka-consumer").with(["group_id": .string(groupId)])
        let context = RDKafkaCallbackContext(logger: logger, statistics: KafkaStatisticsStore())
        let handle = try RDKafkaClient.make(
            .consumer, configuration: effective, context: context, rebalanceCallback: true)
        // Everything (rebalances, errors, statistics) is served by rd_kafka_consumer_poll on the poll thread.
        rd_kafka_poll_set_consumer(handle.pointer)
        self.groupId = groupId
        self.topics = topics
        self.handle = handle
        self.context = context
        self.delegateBox = Locked(delegate)
        self.commitPacer = Locked(CommitPacer(minimumInterval: commitInterval))
        self.startingOffsets = startingOffsets
        self.logger = logger
        context.attach(self)
        if let metrics { registerMetrics(metrics) }
    }

    /// Subscribes to the topics and starts the poll thread. Later calls, and calls after `close`, do nothing.
    public func start() {
        let shouldStart = lifecycle.withLock { state in
            guard state == .created else { return false }
            state = .running
            return true
        }
        guard shouldStart else { return }
        let subscription = RDKafkaTopicPartitionList.make(
            topics.map { TopicPartition(topic: $0, partition: -1) })
        let code = rd_kafka_subscribe(handle.pointer, subscription)
        rd_kafka_topic_partition_list_destroy(subscription)
        if code == RD_KAFKA_RESP_ERR_NO_ERROR {
            logger.info("consumer started", ["topics": .string(topics.joined(separator: ","))])
        } else {
            let error = KafkaError.from(code, context: "cannot subscribe to \(topics.joined(separator: ","))")
            logger.error("subscribe failed", ["error": .string(error.message)])
            delegate?.consumer(self, didFail: error)
        }
        pollThread.start(poll: { [self] in pollOnce() }, finish: { [self] in closeAndDestroy() })
    }

    /// Stores `nextOffset` (the next offset to read, stored as given: no +1) for `partition`; it is committed with
    /// the next `requestCommit` or automatic commit, on revoke and on close.
    /// - Throws: `KafkaError` (`invalidState` or unknown partition) when the partition is not assigned to this
    ///   consumer any more (its messages will be processed again by the new owner), or when closed.
    public func storeOffset(_ partition: TopicPartition, nextOffset: Int64) throws(KafkaError) {
        let stored: Void? = try handle.withClient { client throws(KafkaError) in
            try RDKafkaTopicPartitionList.withList([partition], offsets: [nextOffset]) { list throws(KafkaError) in
                let code = rd_kafka_offsets_store(client, list)
                let entryCode = list.pointee.elems[0].err
                let failure = code != RD_KAFKA_RESP_ERR_NO_ERROR ? code : entryCode
                guard failure == RD_KAFKA_RESP_ERR_NO_ERROR else {
                    throw KafkaError.from(failure, context: "cannot store offset \(nextOffset) for \(partition)")
                }
            }
        }
        guard stored != nil else { throw Self.closedError }
    }

    /// Stops fetching `partitions` (the consumer keeps polling and stays in the group). Messages fetched but not
    /// yet handed out are not handed out while paused (librdkafka refetches them after `resume`, from the position
    /// after the last message handed out; one already in a delegate call may still arrive). A pause does not survive
    /// a rebalance: partitions assigned again start unpaused, so re-apply it in `didAssign` if the reason still holds.
    public func pause(_ partitions: [TopicPartition]) {
        changeFetching(partitions, pause: true)
    }

    /// Resumes fetching `partitions` after `pause`.
    public func resume(_ partitions: [TopicPartition]) {
        changeFetching(partitions, pause: false)
    }

    /// Asks for the stored offsets to be committed soon, without blocking: an asynchronous commit is issued at once
    /// when the last one this method issued is at least `commitInterval` old, else by the poll thread as soon as it
    /// is (requests in between are merged into that one commit). Call it after `storeOffset` advanced an offset.
    /// A failed commit is not retried as such: the next commit (requested, automatic, on revoke or on close) carries
    /// the stored offsets again. Does nothing once closed.
    public func requestCommit() {
        let commitNow = commitPacer.withLock { $0.request(nowNs: SystemTime.monotonicNanoseconds()) }
        if commitNow { commitAsynchronously() }
    }

    /// The group's committed offsets of `partitions` (the next offset to read; nil where nothing is committed),
    /// asked of the group coordinator: blocks up to `timeout`.
    /// - Throws: `KafkaError` when the coordinator does not answer in time, or when closed.
    public func committedOffsets(_ partitions: [TopicPartition], timeout: Duration) throws(KafkaError)
        -> [TopicPartition: Int64]
    {
        let answer = try handle.withClient { client throws(KafkaError) -> [TopicPartition: Int64] in
            try RDKafkaTopicPartitionList.withList(partitions) { list throws(KafkaError) -> [TopicPartition: Int64] in
                let code = rd_kafka_committed(client, list, timeout.clampedMilliseconds)
                guard code == RD_KAFKA_RESP_ERR_NO_ERROR else {
                    throw KafkaError.from(code, context: "cannot read the committed offsets of group \(groupId)")
                }
                var offsets: [TopicPartition: Int64] = [:]
                for entry in RDKafkaTopicPartitionList.entries(list)
                where entry.error == RD_KAFKA_RESP_ERR_NO_ERROR && entry.offset >= 0 {
                    offsets[entry.partition] = entry.offset
                }
                return offsets
            }
        }
        guard let answer else { throw Self.closedError }
        return answer
    }

    /// Asynchronous commits `requestCommit` issued.
    public var commitRequestCount: Int { commitRequests.load(ordering: .relaxed) }

    /// Commits what was stored, synchronously (blocks up to the commit's round trip; do not call on the cooperative
    /// pool in a hot path). Nothing stored is not an error.
    public func commitStoredOffsets() throws(KafkaError) {
        let code = handle.withClient { rd_kafka_commit($0, nil, 0) }
        guard let code else { throw Self.closedError }
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR || code == RD_KAFKA_RESP_ERR__NO_OFFSET else {
            throw KafkaError.from(code, context: "cannot commit stored offsets of group \(groupId)")
        }
    }

    /// Stops polling, lets the delegate hear `willRevoke`, commits stored offsets, leaves the group and destroys the
    /// client, waiting at most `timeout`. When the time is up (brokers unreachable) it returns anyway and the rest
    /// finishes in the background. Idempotent.
    public func close(timeout: Duration) {
        let previous = lifecycle.withLock { state in
            defer { state = .closing }
            return state
        }
        if previous == .created {
            // Never started: run the close path on the poll thread's slot so it is bounded the same way.
            pollThread.start(poll: {}, finish: { [self] in closeAndDestroy() })
        }
        pollThread.requestStop()
        // From a delegate callback (the poll thread): the close runs as soon as the callback returns.
        guard !pollThread.isCurrentThread else { return }
        if !pollThread.wait(timeout: timeout) {
            logger.warning("consumer close did not finish in time; continuing in the background")
        }
    }

    deinit {
        // Only reached when never started (the poll thread keeps a started consumer alive until it closed).
        if handle.retire() {
            handle.destroy()
        }
    }

    /// The partitions currently assigned to this consumer (librdkafka's view).
    public var assignment: [TopicPartition] {
        handle.withClient { client -> [TopicPartition] in
            var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
            guard rd_kafka_assignment(client, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return [] }
            defer { rd_kafka_topic_partition_list_destroy(list) }
            return RDKafkaTopicPartitionList.partitions(list)
        } ?? []
    }

    /// Consumer lag per assigned partition (high watermark minus committed offset), from the latest statistics.
    public var lagByPartition: [TopicPartition: Int64] {
        let current = assigned.withLock { $0 }
        return (context.statistics.current?.consumerLag ?? [:]).filter { current.contains($0.key) }
    }

    /// Rebalances (assignments and revocations) this consumer went through.
    public var rebalanceCount: Int { rebalances.load(ordering: .relaxed) }

    /// True when some broker connection is up, from the latest statistics (false once all brokers are down).
    public var isConnected: Bool {
        guard !allBrokersDown.load(ordering: .relaxed) else { return false }
        return (context.statistics.current?.brokersUp ?? 0) > 0
    }

    /// The latest decoded statistics, if any arrived yet.
    public var statistics: KafkaStatistics? { context.statistics.current }

    private static let closedError = KafkaError(code: KafkaError.destroyed, message: "the Kafka consumer is closed")

    private var delegate: (any KafkaConsumerDelegate)? { delegateBox.withLock { $0 } }

    // MARK: Poll thread

    private func pollOnce() {
        // The trailing edge of requestCommit's pacing: a merged request is committed once its interval has passed,
        // and the poll waits no longer than that.
        let now = SystemTime.monotonicNanoseconds()
        let (commitNow, untilDue) = commitPacer.withLock { pacer in
            (pacer.takeDue(nowNs: now), pacer.nanosecondsUntilDue(nowNs: now))
        }
        if commitNow { commitAsynchronously() }
        let timeoutMs = untilDue.map { Int32(clamping: min(max(($0 + 999_999) / 1_000_000, 1), 100)) } ?? 100
        guard let message = rd_kafka_consumer_poll(handle.pointer, timeoutMs) else { return }
        defer { rd_kafka_message_destroy(message) }
        let code = message.pointee.err
        if code == RD_KAFKA_RESP_ERR_NO_ERROR {
            delegate?.consumer(self, didReceive: RDKafkaMessageReader.read(message))
        } else if code != RD_KAFKA_RESP_ERR__PARTITION_EOF {
            let text =
                rd_kafka_message_errstr(message).map { String(cString: $0) } ?? KafkaError.describe(code: code.rawValue)
            report(KafkaError(code: code.rawValue, message: text))
        }
    }

    /// Runs on the poll thread after the loop stopped (or on its own thread when never started).
    private func closeAndDestroy() {
        // Serves the final revoke (delegate's willRevoke) and commits stored offsets.
        let code = rd_kafka_consumer_close(handle.pointer)
        if code != RD_KAFKA_RESP_ERR_NO_ERROR {
            logger.warning(
                "consumer close reported an error", ["error": .string(KafkaError.describe(code: code.rawValue))])
        }
        if handle.retire() {
            handle.destroy()
        }
        assigned.withLock { $0.removeAll() }
        delegateBox.withLock { $0 = nil }
        logger.info("consumer closed")
    }

    /// Commits the stored offsets of the assignment without waiting for the answer (librdkafka logs a failure).
    private func commitAsynchronously() {
        let code = handle.withClient { rd_kafka_commit($0, nil, 1) }
        guard let code else { return }
        commitRequests.add(1, ordering: .relaxed)
        if code != RD_KAFKA_RESP_ERR_NO_ERROR && code != RD_KAFKA_RESP_ERR__NO_OFFSET {
            logger.debug("commit not issued", ["error": .string(KafkaError.describe(code: code.rawValue))])
        }
    }

    private func report(_ error: KafkaError) {
        if error.code == KafkaError.allBrokersDown {
            allBrokersDown.store(true, ordering: .relaxed)
        }
        if error.isFatal {
            logger.error("Kafka consumer fatal error", ["code": .int(Int(error.code)), "error": .string(error.message)])
        } else {
            logger.warning("Kafka consumer error", ["code": .int(Int(error.code)), "error": .string(error.message)])
        }
        delegate?.consumer(self, didFail: error)
    }

    private func changeFetching(_ partitions: [TopicPartition], pause: Bool) {
        guard !partitions.isEmpty else { return }
        _ = handle.withClient { client in
            RDKafkaTopicPartitionList.withList(partitions) { list in
                let code = pause ? rd_kafka_pause_partitions(client, list) : rd_kafka_resume_partitions(client, list)
                if code != RD_KAFKA_RESP_ERR_NO_ERROR {
                    logger.warning(
                        pause ? "pause failed" : "resume failed",
                        ["error": .string(KafkaError.describe(code: code.rawValue))])
                }
            }
        }
    }

    private func registerMetrics(_ metrics: MetricsRegistry) {
        metrics.collect(
            "kafka_consumer_lag", help: "Messages behind the partition's high watermark (committed offset)",
            kind: .gauge
        ) { [weak self] in
            guard let self else { return [] }
            return lagByPartition.sorted { $0.key < $1.key }.map { partition, lag in
                ([("topic", partition.topic), ("partition", String(partition.partition))], Double(lag))
            }
        }
        metrics.collect("kafka_rebalances_total", help: "Consumer group rebalances (assign and revoke)", kind: .counter) {
            [weak self] in
            [([], Double(self?.rebalanceCount ?? 0))]
        }
        metrics.collect(
            "kafka_consumer_fetch_queue_messages", help: "Messages fetched and not yet handed out", kind: .gauge
        ) { [weak self] in
            [([], Double(self?.statistics?.fetchQueueMessages ?? 0))]
        }
        metrics.collect("kafka_consumer_assigned_partitions", help: "Partitions assigned to this consumer", kind: .gauge)
        { [weak self] in
            [([], Double(self?.assigned.withLock { $0.count } ?? 0))]
        }
        metrics.collect(
            "kafka_consumer_commit_requests_total",
            help: "Asynchronous commits of stored offsets issued after offsets advanced (auto-commits not counted)",
            kind: .counter
        ) { [weak self] in
            [([], Double(self?.commitRequestCount ?? 0))]
        }
    }
}

extension KafkaConsumer: RDKafkaClientEvents {
    func rdKafkaDidReport(_ error: KafkaError) {
        report(error)
    }

    func rdKafkaRebalance(
        _ client: OpaquePointer, _ code: rd_kafka_resp_err_t,
        _ partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
    ) {
        let list = RDKafkaTopicPartitionList.partitions(partitions)
        let cooperative = String(cString: rd_kafka_rebalance_protocol(client)) == "COOPERATIVE"
        rebalances.add(1, ordering: .relaxed)
        switch code {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
            if let startingOffsets, let partitions { Self.setOffsets(of: partitions, from: startingOffsets(list)) }
            let failure: KafkaError?
            if cooperative {
                failure = rd_kafka_incremental_assign(client, partitions).map {
                    KafkaError.consuming($0, context: "cannot assign partitions")
                }
            } else {
                let assignCode = rd_kafka_assign(client, partitions)
                failure =
                    assignCode == RD_KAFKA_RESP_ERR_NO_ERROR
                    ? nil : KafkaError.from(assignCode, context: "cannot assign partitions")
            }
            if let failure {
                report(failure)
                return
            }
            assigned.withLock { $0.formUnion(list) }
            allBrokersDown.store(false, ordering: .relaxed)
            logger.info("partitions assigned", ["partitions": .string(Self.describe(list))])
            delegate?.consumer(self, didAssign: list)
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
            logger.info(
                "partitions revoked",
                ["partitions": .string(Self.describe(list)), "lost": .bool(rd_kafka_assignment_lost(client) != 0)])
            delegate?.consumer(self, willRevoke: list)
            if cooperative {
                if let error = rd_kafka_incremental_unassign(client, partitions) {
                    report(KafkaError.consuming(error, context: "cannot unassign partitions"))
                }
            } else {
                rd_kafka_assign(client, nil)
            }
            assigned.withLock { $0.subtract(list) }
        default:
            report(KafkaError.from(code, context: "rebalance failed"))
            if cooperative {
                if let error = rd_kafka_incremental_unassign(client, partitions) { rd_kafka_error_destroy(error) }
            } else {
                rd_kafka_assign(client, nil)
            }
            assigned.withLock { $0.removeAll() }
        }
    }

    /// Writes each entry's starting offset into the list about to be assigned (absent: the partition's beginning).
    private static func setOffsets(
        of partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>, from offsets: [TopicPartition: Int64]
    ) {
        guard let elements = partitions.pointee.elems else { return }
        for index in 0..<Int(partitions.pointee.cnt) {
            let partition = TopicPartition(
                topic: String(cString: elements[index].topic), partition: elements[index].partition)
            elements[index].offset = offsets[partition] ?? Int64(RD_KAFKA_OFFSET_BEGINNING)
        }
    }

    private static func describe(_ partitions: [TopicPartition]) -> String {
        partitions.sorted().map(\.description).joined(separator: ",")
    }
}
