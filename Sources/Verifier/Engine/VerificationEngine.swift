import AppStore
import Dispatch
import Foundation
import Kafka
import Notifications
import ReceiptModel
import ServiceSupport
import Synchronization

/// The verifier's core: consumes messages, verifies submissions at Apple with many rounds in flight, writes one
/// result (or retry / DLQ records) per message, and stores each input offset only after every output of it and of
/// all earlier messages of its partition was acknowledged by Kafka.
///
/// Notifications (`NOTIFICATIONS_TOPIC`) take the same path as malformed submissions: no Apple call, so they never
/// queue for an Apple slot; they are verified on the work queue and their event (or DLQ record) is published at
/// once. They are admitted, windowed, paused and resumed, and their offsets stored, exactly like submissions; since
/// no Apple slot bounds them, their partitions are also paused while `DispatchLimits.directLimit` of them are in
/// progress (memory: a backlog of ~12 KB notifications would otherwise be admitted whole).
///
/// Threads: `consume`, `partitionsAssigned` and `partitionsRevoking` are called on the consumer's poll thread;
/// Apple completions and delivery reports arrive on library threads. CPU work (decoding, encoding) runs on a
/// concurrent Dispatch queue; all bookkeeping is in `DispatchState` behind one lock, and its actions run outside it.
///
/// Files by concern: here the engine's state, the consumer's events, draining and the state's actions;
/// `+Processing` a message's way through triage and rounds, `+Notifications` verifying and holding notifications,
/// `+Publishing` writing records and completing messages.
final class VerificationEngine: Sendable {
    struct Configuration: Sendable {
        var topics: TopicNames
        var limits: DispatchLimits
        var retryPolicy: RetryRoundPolicy
        var breaker: AppleCircuitBreaker.Configuration
        /// The waits between attempts to publish a record: 50 ms after the first failure, doubling up to 5 s.
        var publishBackoff = Backoff(initial: .milliseconds(50), maximum: .seconds(5))
        /// Publishes in a row that failed with an error retrying cannot fix (authorization, unknown topic) before
        /// `/readyz` reports not ready.
        var publishFailuresBeforeNotReady = 10

        init(
            topics: TopicNames, limits: DispatchLimits, retryPolicy: RetryRoundPolicy,
            breaker: AppleCircuitBreaker.Configuration = .init()
        ) {
            self.topics = topics
            self.limits = limits
            self.retryPolicy = retryPolicy
            self.breaker = breaker
        }
    }

    /// Counts for health and metrics.
    struct Snapshot: Sendable, Equatable {
        var appleInFlight: Int
        var waitingForApple: Int
        var liveMessages: Int
        var assignedPartitions: Int
        var pausedPartitions: Int
        /// The pending gate holds the consumer's intake (`DispatchState.isIntakeHeld`).
        var intakeHeld: Bool
        var breakerOpen: Bool
        var stopping: Bool
    }

    let configuration: Configuration
    let verifier: any SubmissionVerifying
    let notifications: NotificationProcessor?
    let publisher: any RecordPublishing
    let clock: any ServiceClock
    let logger: Logger
    let metrics: VerifierMetrics
    let triage: MessageTriage
    let router: RoundOutcomeRouter
    let applier: ConsumerControlApplier
    let publishHealth: PublishHealth
    let state: Locked<DispatchState<VerificationJob>>
    /// CPU work (decoding, encoding, a round's end): only through `enqueue`, which counts it.
    private let work = DispatchQueue(label: "verifier-work", attributes: .concurrent)
    /// Blocks enqueued and not finished (those they enqueue included): `waitForQueuedWork`'s end condition.
    private let queuedWork = Atomic<Int>(0)

    /// - Parameter notifications: verifies messages of `topics.notifications`; without it they are treated as
    ///   malformed submissions (the service always gives one).
    init(
        configuration: Configuration, verifier: any SubmissionVerifying, publisher: any RecordPublishing,
        control: any PartitionControl, clock: any ServiceClock, logger: Logger, metrics: VerifierMetrics,
        notifications: NotificationProcessor? = nil
    ) {
        self.configuration = configuration
        self.verifier = verifier
        self.notifications = notifications
        self.publisher = publisher
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
        let factory = OutputFactory(topics: configuration.topics)
        self.triage = MessageTriage(factory: factory)
        self.router = RoundOutcomeRouter(factory: factory, policy: configuration.retryPolicy)
        self.applier = ConsumerControlApplier(control: control, logger: logger)
        self.publishHealth = PublishHealth(notReadyAfter: configuration.publishFailuresBeforeNotReady)
        self.state = Locked(
            DispatchState(
                limits: configuration.limits, breaker: AppleCircuitBreaker(configuration: configuration.breaker),
                directTopics: notifications == nil ? [] : [configuration.topics.notifications]))
    }

    var snapshot: Snapshot {
        state.withLock { state in
            Snapshot(
                appleInFlight: state.appleInFlight, waitingForApple: state.waitingForApple,
                liveMessages: state.liveCount(), assignedPartitions: state.assignedPartitions.count,
                pausedPartitions: state.pausedPartitions.count, intakeHeld: state.isIntakeHeld,
                breakerOpen: state.breaker.isOpen,
                stopping: state.isStopping)
        }
    }

    /// nil while the process can work, else why not (a fatal producer error: only a restart helps).
    var livenessProblem: String? { publishHealth.livenessProblem }

    /// nil while outputs can be written, else why not (fatal, or too many permanent publish failures in a row).
    var publishingProblem: String? { publishHealth.readinessProblem }

    /// The partitions currently paused (for metrics).
    var pausedPartitions: [TopicPartition] { state.withLock { $0.pausedPartitions } }

    // MARK: Consumer events

    func partitionsAssigned(_ partitions: [TopicPartition]) {
        metrics.assigned.increment()
        logger.info("partitions assigned", ["partitions": .string(Self.describe(partitions))])
        let now = clock.monotonicNanoseconds()
        perform(state.withLock { $0.assign(partitions, nowNs: now) })
    }

    /// Stops dispatching the partitions' messages, waits up to `timeout` for their in-flight work to finish (its
    /// offsets are stored as it completes), then forgets them. Blocks the calling (poll) thread.
    func partitionsRevoking(_ partitions: [TopicPartition], timeout: Duration) {
        metrics.revoked.increment()
        perform(state.withLock { $0.beginRevoke(partitions) })
        let finished = waitUntilNoLiveWork(in: partitions, timeout: timeout)
        let left = state.withLock { state in
            let left = state.liveCount(in: partitions)
            state.finishRevoke(partitions)
            return left
        }
        if left > 0 { metrics.abandoned.increment(by: left) }
        logger.info(
            "partitions revoked",
            ["partitions": .string(Self.describe(partitions)), "drained": .bool(finished), "abandoned": .int(left)])
    }

    /// A consumed message. Never blocks: decoding happens on the work queue.
    func consume(_ message: KafkaMessage) {
        let (ticket, step) = state.withLock { $0.admit(message.topicPartition, offset: message.offset) }
        perform(step)
        guard let ticket else {
            logger.debug(
                "message ignored (partition not assigned, revoking or stopping)",
                ["partition": .string(message.topicPartition.description), "offset": .int(Int(message.offset))])
            return
        }
        enqueue { self.process(message, ticket: ticket) }
    }

    /// Periodic: lets a due probe go while the breaker is open, refreshes gauges.
    func tick() {
        let now = clock.monotonicNanoseconds()
        perform(state.withLock { $0.tick(nowNs: now) })
    }

    /// Shutdown: pauses every partition, drops what has not started, and waits up to `bound` for in-flight work
    /// to be written and its offsets stored. Then gives every partition up: work still running is abandoned (rounds
    /// ending later, for example when the App Store client is closed, write nothing; the messages are read again
    /// after the restart). Returns true when nothing was left unfinished.
    func drain(within bound: Duration) -> Bool {
        perform(state.withLock { $0.stop() })
        let finished = waitUntilNoLiveWork(in: nil, timeout: bound)
        let left = state.withLock { state in
            let left = state.liveCount()
            state.finishRevoke(state.assignedPartitions)
            return left
        }
        if left > 0 { metrics.abandoned.increment(by: left) }
        logger.info("drained", ["complete": .bool(finished), "abandoned": .int(left)])
        return finished
    }

    // MARK: Actions

    func perform(_ step: DispatchState<VerificationJob>.Step) {
        applier.apply(step.controls)
        if !step.dropped.isEmpty { metrics.abandoned.increment(by: step.dropped.count) }
        if let reset = step.positionReset {
            metrics.abandoned.increment(by: reset.abandonedInFlight)
            logger.error(
                "the consumer's position went backwards (offset reset, e.g. a truncated log): starting the partition "
                    + "afresh; work of the old position is abandoned and read again",
                [
                    "partition": .string(reset.partition.description),
                    "previous_offset": .int(Int(reset.previousOffset)),
                    "offset": .int(Int(reset.newOffset)),
                    "abandoned": .int(reset.abandonedInFlight + step.dropped.count),
                ])
        }
        switch step.breakerTransition {
        case .opened:
            metrics.breakerOpen.set(1)
            metrics.breakerOpened.increment()
            logger.error("Apple is failing broadly: circuit breaker open, new work held back and probing")
        case .closed:
            metrics.breakerOpen.set(0)
            metrics.breakerClosed.increment()
            logger.info("Apple answers again: circuit breaker closed")
        case nil:
            break
        }
        for dispatch in step.dispatches {
            startRound(dispatch)
        }
    }

    /// Polls until no message is live and every control batch emitted so far was applied (so the offsets the last
    /// completions produced are stored before the caller revokes or closes), or until the deadline.
    /// The bound is real elapsed time (not the injected clock): it limits how long a thread is blocked.
    /// Runs `body` on the work queue, counted until it has run.
    func enqueue(_ body: @escaping @Sendable () -> Void) {
        queuedWork.add(1, ordering: .relaxed)
        work.async {
            body()
            self.queuedWork.subtract(1, ordering: .releasing)
        }
    }

    /// Blocks until every block enqueued so far, and every block those enqueued, has run: a point where everything
    /// the engine was asked to do has been done, after which only a new event (a message, an answer from Apple or
    /// Kafka, a timer) makes it do anything. A block counts itself off only after it ran, so the count is never zero
    /// while a chain of blocks is live; each barrier waits for every block queued before it.
    func waitForQueuedWork() {
        repeat {
            work.sync(flags: .barrier) {}
        } while queuedWork.load(ordering: .acquiring) > 0
    }

    private func waitUntilNoLiveWork(in partitions: [TopicPartition]?, timeout: Duration) -> Bool {
        let deadline = DispatchTime.now().uptimeNanoseconds &+ timeout.clampedNanoseconds
        while true {
            let (live, emitted) = state.withLock { ($0.liveCount(in: partitions), $0.controlSequence) }
            if live == 0, applier.processedBatches >= emitted { return true }
            if DispatchTime.now().uptimeNanoseconds >= deadline { return false }
            usleep(5_000)
        }
    }

    private static func describe(_ partitions: [TopicPartition]) -> String {
        partitions.map(\.description).sorted().joined(separator: ",")
    }
}