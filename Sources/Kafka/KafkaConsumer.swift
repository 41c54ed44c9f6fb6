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
/// Lifecycle (`ClientLifecycle`): `init` validates the configuration; `start` subscribes and starts polling;
/// `close` leaves the group (bounded) and destroys the client. The consumer stays alive until `close` even when its
/// owner drops it. Every librdkafka call goes through `RDKafkaClient`.
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
    /// The client and the delegate (held by the lifecycle state while they may be used: closing drops both) and
    /// the poll thread.
    private let runtime: ClientRuntime<Resources>
    private let context: RDKafkaCallbackContext
    private let assigned = Locked<Set<TopicPartition>>([])
    private let rebalances = Atomic<Int>(0)
    private let allBrokersDown = Atomic<Bool>(false)
    private let commitPacer: Locked<CommitPacer>
    private let commitRequests = Atomic<Int>(0)
    private let startingOffsets: StartingOffsets?
    private let logger: Logger
    /// Makes a resume take effect at once (`RDKafkaClient.wakeFetchers`).
    private let fetchWaker: FetchWaker
    /// `holdIntake`: while true the poll thread polls only every `heldPollInterval`.
    private let intakeHeld = Atomic<Bool>(false)
    /// Signalled when the intake is released, so a held poll thread polls at once.
    private let intakeReleased = DispatchSemaphore(value: 0)

    /// How often a consumer whose intake is held still polls (rebalances, errors, statistics; a message it returns
    /// is handed out too).
    public static let heldPollInterval: Duration = .milliseconds(250)

    /// What the lifecycle state holds until the consumer is closed.
    struct Resources: Sendable {
        let client: RDKafkaClient
        let delegate: any KafkaConsumerDelegate
    }

    /// Where assigned partitions start when their owner keeps its own offsets (in a database, written in the same
    /// transaction as the work): given the partitions being assigned, the next offset to read of each; a partition
    /// left out starts at its beginning. Called on the poll thread inside the assignment, before any message of
    /// those partitions is fetched (it may block, bounded, for example to reach its database).
    public typealias StartingOffsets = @Sendable ([TopicPartition]) -> [TopicPartition: Int64]

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
                code: KafkaErrorCode.invalidArgument, message: "a consumer needs a group id and at least one topic name")
        }
        var effective = configuration.merged(withDefaults: Self.defaultProperties)
        effective["group.id"] = groupId
        effective["enable.auto.offset.store"] = "false"
        let logger = logger.named(logger.label + ".kafka-consumer").with(["group_id": .string(groupId)])
        let context = RDKafkaCallbackContext(logger: logger, statistics: KafkaStatisticsStore())
        // Everything (rebalances, errors, statistics) is served by the consumer poll on the poll thread.
        let client = try RDKafkaClient.make(
            .consumer, configuration: effective, context: context, rebalanceCallback: true,
            closedError: Self.closedError)
        self.groupId = groupId
        self.topics = topics
        self.runtime = ClientRuntime(
            Resources(client: client, delegate: delegate), threadName: "kafka-consumer-poll")
        self.context = context
        self.commitPacer = Locked(CommitPacer(minimumInterval: commitInterval))
        self.startingOffsets = startingOffsets
        self.logger = logger
        self.fetchWaker = FetchWaker { [runtime] partitions in
            runtime.resources?.client.wakeFetchers(of: partitions, timeout: .milliseconds(500))
        }
        context.attach(self)
        if let metrics { registerMetrics(metrics) }
    }

    /// Subscribes to the topics and starts the poll thread. Later calls, and calls after `close`, do nothing.
    public func start() {
        runtime.start(self)
    }

    /// Stores `nextOffset` (the next offset to read, stored as given: no +1) for `partition`; it is committed with
    /// the next `requestCommit` or automatic commit, on revoke and on close.
    /// - Throws: `KafkaError` (`invalidState` or unknown partition) when the partition is not assigned to this
    ///   consumer any more (its messages will be processed again by the new owner), or when closed.
    public func storeOffset(_ partition: TopicPartition, nextOffset: Int64) throws(KafkaError) {
        guard let client = runtime.resources?.client else { throw Self.closedError }
        try client.storeOffset(partition, nextOffset: nextOffset)
    }

    /// Stops fetching `partitions` (the consumer keeps polling and stays in the group). Messages fetched but not
    /// yet handed out are not handed out while paused (librdkafka refetches them after `resume`, from the position
    /// after the last message handed out; one already in a delegate call may still arrive). A pause does not survive
    /// a rebalance: partitions assigned again start unpaused, so re-apply it in `didAssign` if the reason still holds.
    public func pause(_ partitions: [TopicPartition]) {
        changeFetching(partitions, pause: true)
    }

    /// Holds back (true) or releases (false) the messages librdkafka has fetched, without pausing anything: while
    /// held, the poll thread polls only every `heldPollInterval` (so rebalances, errors and statistics are still
    /// served; a message such a poll returns is handed to the delegate), and librdkafka keeps what it prefetched,
    /// fetching more only up to its own queue thresholds (`queued.min.messages`, `queued.max.messages.kbytes`).
    /// Unlike `pause`, which drops the prefetched messages and fetches them again after `resume`, nothing is fetched
    /// twice: for a short hold (back-pressure) rather than a long one (an outage). Any thread.
    public func holdIntake(_ held: Bool) {
        let wasHeld = intakeHeld.exchange(held, ordering: .acquiringAndReleasing)
        if held, !wasHeld {
            // A release the poll thread did not wait for must not cut this hold's first wait short.
            while intakeReleased.wait(timeout: .now()) == .success {}
        } else if wasHeld, !held {
            intakeReleased.signal()
        }
    }

    /// Whether `holdIntake(true)` holds the intake now.
    public var isIntakeHeld: Bool { intakeHeld.load(ordering: .acquiring) }

    /// Resumes fetching `partitions` after `pause`.
    /// - Parameter wakingFetchers: also wake the broker threads of the partitions' leaders (off this thread: one
    ///   ListOffsets request per leader, `RDKafkaClient.wakeFetchers`), so fetching restarts at once. librdkafka 2.0
    ///   does not wake them on a resume: a broker thread with nothing in flight, as after a pause of every
    ///   partition, looks again only after up to a second. Not needed when other partitions of the same leaders
    ///   keep fetching (the next fetch answer wakes the thread), and a consumer resuming single partitions often
    ///   would pay a request per resume (the verifier's broker thread CPU doubled that way).
    public func resume(_ partitions: [TopicPartition], wakingFetchers: Bool) {
        changeFetching(partitions, pause: false)
        if wakingFetchers { fetchWaker.request(partitions) }
    }

    /// Resumes fetching `partitions` after `pause`, without waking the fetchers (`resume(_:wakingFetchers:)`).
    public func resume(_ partitions: [TopicPartition]) {
        resume(partitions, wakingFetchers: false)
    }

    /// The logical offset of a partition's first retained message, for `seek`.
    public static let beginningOffset = RDKafkaClient.offsetBeginning

    /// Moves assigned partitions' fetch positions (`offsets[partition]`: the next offset to read, or
    /// `beginningOffset`), waiting up to `timeout` until no message fetched from the old positions can be handed out.
    /// Any thread.
    /// - Returns: why librdkafka refused (a partition no longer assigned, the client closed), or nil.
    @discardableResult
    public func seek(_ offsets: [TopicPartition: Int64], timeout: Duration) -> KafkaError? {
        guard !offsets.isEmpty else { return nil }
        guard let client = runtime.resources?.client else { return Self.closedError }
        let partitions = offsets.keys.sorted()
        return client.seek(partitions, to: partitions.map { offsets[$0]! }, timeout: timeout)
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
        guard let client = runtime.resources?.client else { throw Self.closedError }
        return try client.committedOffsets(
            partitions, timeout: timeout, context: "cannot read the committed offsets of group \(groupId)")
    }

    /// The Kafka cluster's id (blocks up to `timeout`); nil when closed or not known in time.
    public func clusterId(timeout: Duration) -> String? {
        runtime.resources?.client.clusterId(timeout: timeout)
    }

    /// The partition's end (the offset the next message will get), asked of its leader (blocks up to `timeout`);
    /// nil when closed or not answered.
    public func highWatermark(_ partition: TopicPartition, timeout: Duration) -> Int64? {
        watermarks(partition, timeout: timeout)?.high
    }

    /// The partition's first retained offset (`low`: retention deleted what was before it) and its end (`high`),
    /// asked of its leader in one request (blocks up to `timeout`); nil when closed or not answered.
    public func watermarks(_ partition: TopicPartition, timeout: Duration) -> (low: Int64, high: Int64)? {
        guard case .success(let marks)? = runtime.resources?.client.watermarks(
            topic: partition.topic, partition: partition.partition, timeout: timeout)
        else { return nil }
        return marks
    }

    /// Asynchronous commits `requestCommit` issued.
    public var commitRequestCount: Int { commitRequests.load(ordering: .relaxed) }

    /// Commits what was stored, synchronously (blocks up to the commit's round trip; do not call on the cooperative
    /// pool in a hot path). Nothing stored is not an error.
    public func commitStoredOffsets() throws(KafkaError) {
        let outcome = runtime.resources?.client.commitStoredOffsets(
            async: false, context: "cannot commit stored offsets of group \(groupId)")
        guard let outcome else { throw Self.closedError }
        try outcome.get()
    }

    /// Stops polling, lets the delegate hear `willRevoke`, commits stored offsets, leaves the group and destroys the
    /// client, waiting at most `timeout`. When the time is up (brokers unreachable) it returns anyway and the rest
    /// finishes in the background. Idempotent.
    public func close(timeout: Duration) {
        // A held poll thread must not sit out its interval before it sees the stop.
        holdIntake(false)
        runtime.close(self, timeout: timeout)
    }

    /// The partitions currently assigned to this consumer (librdkafka's view).
    public var assignment: [TopicPartition] {
        runtime.resources?.client.assignment ?? []
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

    private static let closedError = KafkaError(code: KafkaErrorCode.destroyed, message: "the Kafka consumer is closed")

    private var delegate: (any KafkaConsumerDelegate)? { runtime.resources?.delegate }

    /// Commits the stored offsets of the assignment without waiting for the answer (librdkafka logs a failure).
    private func commitAsynchronously() {
        let outcome = runtime.resources?.client.commitStoredOffsets(async: true, context: "commit not issued")
        guard let outcome else { return }
        commitRequests.add(1, ordering: .relaxed)
        if case .failure(let error) = outcome {
            logger.debug("commit not issued", ["error": .string(KafkaError.describe(code: error.code))])
        }
    }

    private func report(_ error: KafkaError) {
        if error.code == KafkaErrorCode.allBrokersDown {
            allBrokersDown.store(true, ordering: .relaxed)
        }
        if error.isFatal {
            logger.error("Kafka consumer fatal error", ["code": .int(Int(error.code.rawValue)), "error": .string(error.message)])
        } else {
            logger.warning("Kafka consumer error", ["code": .int(Int(error.code.rawValue)), "error": .string(error.message)])
        }
        delegate?.consumer(self, didFail: error)
    }

    private func changeFetching(_ partitions: [TopicPartition], pause: Bool) {
        guard !partitions.isEmpty, let failure = runtime.resources?.client.setFetching(partitions, paused: pause)
        else { return }
        logger.warning(pause ? "pause failed" : "resume failed", ["error": .string(failure.message)])
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

// MARK: Poll thread

extension KafkaConsumer: PolledClientOwner {
    func willStartPolling(_ resources: Resources) {
        if let error = resources.client.subscribe(topics) {
            logger.error("subscribe failed", ["error": .string(error.message)])
            resources.delegate.consumer(self, didFail: error)
        } else {
            logger.info("consumer started", ["topics": .string(topics.joined(separator: ","))])
        }
    }

    func pollOnce(_ resources: Resources) {
        if intakeHeld.load(ordering: .acquiring) {
            // Held: wait for the release (or the interval), then poll once all the same.
            _ = intakeReleased.wait(timeout: .now() + .milliseconds(Int(Self.heldPollInterval / .milliseconds(1))))
        }
        // The trailing edge of requestCommit's pacing: a merged request is committed once its interval has passed,
        // and the poll waits no longer than that.
        let now = SystemTime.monotonicNanoseconds()
        let (commitNow, untilDue) = commitPacer.withLock { pacer in
            (pacer.takeDue(nowNs: now), pacer.nanosecondsUntilDue(nowNs: now))
        }
        if commitNow { commitAsynchronously() }
        let timeoutMs = untilDue.map { Int32(clamping: min(max(($0 + 999_999) / 1_000_000, 1), 100)) } ?? 100
        switch resources.client.consumerPoll(timeoutMs: timeoutMs) {
        case .message(let message)?: resources.delegate.consumer(self, didReceive: message)
        case .error(let error)?: report(error)
        case nil: break
        }
    }

    /// After the loop stopped (or on its own thread when never started): serves the final revoke (the delegate's
    /// `willRevoke`), commits stored offsets, leaves the group and destroys the client. The delegate is let go by
    /// the transition to `closed` that follows.
    func closeClient(_ resources: Resources) {
        let client = resources.client
        if let error = client.closeConsumer() {
            logger.warning("consumer close reported an error", ["error": .string(error.message)])
        }
        if client.retire() {
            client.destroy()
        }
        assigned.withLock { $0.removeAll() }
        logger.info("consumer closed")
    }

    func closeDidTimeOut() {
        logger.warning("consumer close did not finish in time; continuing in the background")
    }
}

extension KafkaConsumer: RDKafkaClientEvents {
    package func rdKafkaDidReport(_ error: KafkaError) {
        report(error)
    }

    package func rdKafkaRebalance(_ rebalance: RDKafkaRebalance) {
        let list = rebalance.partitions
        rebalances.add(1, ordering: .relaxed)
        switch rebalance.kind {
        case .assign:
            if let failure = rebalance.assign(startingOffsets: startingOffsets.map { $0(list) }) {
                report(failure)
                return
            }
            assigned.withLock { $0.formUnion(list) }
            allBrokersDown.store(false, ordering: .relaxed)
            logger.info("partitions assigned", ["partitions": .string(Self.describe(list))])
            delegate?.consumer(self, didAssign: list)
        case .revoke:
            logger.info(
                "partitions revoked",
                ["partitions": .string(Self.describe(list)), "lost": .bool(rebalance.isAssignmentLost)])
            delegate?.consumer(self, willRevoke: list)
            if let error = rebalance.unassign() { report(error) }
            assigned.withLock { $0.subtract(list) }
        case .failed(let error):
            report(error)
            rebalance.unassign()
            assigned.withLock { $0.removeAll() }
        }
    }

    private static func describe(_ partitions: [TopicPartition]) -> String {
        partitions.sorted().map(\.description).joined(separator: ",")
    }
}
