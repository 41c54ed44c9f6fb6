import AppStore
import Dispatch
import Foundation
import Kafka
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

    private let configuration: Configuration
    private let verifier: any SubmissionVerifying
    private let notifications: NotificationProcessor?
    private let publisher: any RecordPublishing
    private let clock: any ServiceClock
    private let logger: Logger
    private let metrics: VerifierMetrics
    private let triage: MessageTriage
    private let router: RoundOutcomeRouter
    private let applier: ConsumerControlApplier
    private let publishHealth: PublishHealth
    private let state: Locked<DispatchState<VerificationJob>>
    private let work = DispatchQueue(label: "verifier-work", attributes: .concurrent)

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
        work.async { self.process(message, ticket: ticket) }
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

    // MARK: Processing

    private func process(_ message: KafkaMessage, ticket: MessageTicket) {
        let nowMs = clock.wallMilliseconds()
        if let notifications, message.topic == configuration.topics.notifications {
            processNotification(message, ticket: ticket, processor: notifications, nowMs: nowMs)
            return
        }
        switch triage.triage(message, nowMs: nowMs) {
        case .malformed(let records, let problem, let submissionId):
            metrics.malformed.increment()
            var fields: KeyValuePairs<String, LogValue> = [:]
            fields = [
                "submission_id": .string(submissionId ?? ""), "topic": .string(message.topic),
                "partition": .int(Int(message.partition)), "offset": .int(Int(message.offset)),
                "bytes": .int(message.value.count), "problem": .string(problem),
            ]
            guard stillOwned(ticket) else { return }
            logger.warning("malformed message sent to the DLQ", fields)
            let disposition: RoundDisposition? = submissionId == nil ? nil : .result(.failed, .malformedSubmission)
            publish(PublishGroup(ticket: ticket, records: records, disposition: disposition, submittedAtMs: nil))

        case .verify(let job):
            let now = clock.monotonicNanoseconds()
            perform(state.withLock { $0.enqueue(ticket, work: job, nowNs: now) })

        case .waitUntil(let notBeforeMs, let job):
            metrics.heldRetryRecords.increment()
            perform(state.withLock { $0.hold(ticket) })
            // No round legitimately waits longer than the policy's longest backoff: a record due further ahead
            // (clock skew, a hand-written record) must not keep its partition paused for longer than that.
            let longest = configuration.retryPolicy.maximumBackoff.clampedMilliseconds
            clock.schedule(after: .milliseconds(min(notBeforeMs - nowMs, longest))) {
                self.metrics.heldRetryRecords.decrement()
                let now = self.clock.monotonicNanoseconds()
                self.perform(self.state.withLock { $0.release(ticket, work: job, nowNs: now) })
            }
        }
    }

    /// Verifies a notification and publishes its event, or its DLQ record, like a malformed message: directly. A
    /// notification that cannot be judged now (`NotificationRejection.isRetryable`: its signing chain's revocation
    /// status is unavailable) is held instead and verified again after a backoff (`notificationRetryDelay`): it
    /// keeps its place in its partition (its offset and those after it are not stored, the partition window fills
    /// and pauses the partition as during an Apple outage), nothing is written, nothing is lost; on revoke or
    /// shutdown it is abandoned like in-flight work and redelivered.
    private func processNotification(
        _ message: KafkaMessage, ticket: MessageTicket, processor: NotificationProcessor, nowMs: Int64,
        attempt: Int = 0
    ) {
        let outcome = processor.process(message.value)
        guard stillOwned(ticket) else { return }
        if case .failure(let rejection) = outcome, rejection.isRetryable {
            holdNotification(message, ticket: ticket, processor: processor, rejection: rejection, attempt: attempt)
            return
        }
        switch outcome {
        case .success(let notification):
            let event = notification.event
            if logger.isEnabled(.debug) {
                logger.debug(
                    "notification verified",
                    [
                        "event_id": .string(event.eventId), "type": .string(event.type.rawValue),
                        "notification_type": .string(event.notificationType),
                        "transaction_id": .string(event.transaction?.transactionId ?? ""),
                    ])
            }
            publish(
                PublishGroup(
                    ticket: ticket, records: [router.factory.event(notification)], disposition: nil,
                    submittedAtMs: nil,
                    notification: .event(
                        event.type, notificationType: event.notificationType, receivedAtMs: event.receivedAtMs)))
        case .failure(let rejection):
            logger.warning(
                "notification sent to the DLQ",
                [
                    "notification_uuid": .string(rejection.notificationUUID ?? ""),
                    "reason": .string(rejection.reason.rawValue), "problem": .string(rejection.message),
                    "topic": .string(message.topic), "partition": .int(Int(message.partition)),
                    "offset": .int(Int(message.offset)), "bytes": .int(message.value.count),
                ])
            let record = router.factory.deadLetter(
                message: message, submissionId: nil, reason: rejection.reason, text: rejection.message,
                appleStatus: nil, attempts: 0, nowMs: nowMs)
            publish(
                PublishGroup(
                    ticket: ticket, records: [record], disposition: nil, submittedAtMs: nil,
                    notification: .rejected(rejection.reason)))
        }
    }

    /// The waits before verifying a held notification again: 1 s, doubling, at most 60 s.
    static let notificationBackoff = Backoff(initial: .seconds(1), maximum: .seconds(60))

    /// The wait after verifying a held notification failed `attempt + 1` times.
    static func notificationRetryDelay(attempt: Int) -> Duration {
        notificationBackoff.wait(afterFailures: attempt + 1)
    }

    private func holdNotification(
        _ message: KafkaMessage, ticket: MessageTicket, processor: NotificationProcessor,
        rejection: NotificationRejection, attempt: Int
    ) {
        let delay = Self.notificationRetryDelay(attempt: attempt)
        let fields: KeyValuePairs<String, LogValue> = [
            "notification_uuid": .string(rejection.notificationUUID ?? ""), "attempt": .int(attempt + 1),
            "retry_in_ms": .int(Int(delay.clampedMilliseconds)), "problem": .string(rejection.message),
            "topic": .string(message.topic), "partition": .int(Int(message.partition)),
            "offset": .int(Int(message.offset)),
        ]
        if attempt == 0 { logger.warning("notification held: it cannot be verified now, retrying", fields) } else {
            logger.info("notification still held", fields)
        }
        clock.schedule(after: delay) { [self] in
            // Given up meanwhile (revoke, shutdown): the partition's next owner reads it again.
            guard stillOwned(ticket) else { return }
            work.async { [self] in
                processNotification(
                    message, ticket: ticket, processor: processor, nowMs: clock.wallMilliseconds(),
                    attempt: attempt + 1)
            }
        }
        metrics.notificationsHeld.increment()
    }

    private func startRound(_ dispatch: DispatchState<VerificationJob>.Dispatch) {
        let started = clock.monotonicNanoseconds()
        if dispatch.isProbe {
            logger.info("probing Apple", ["submission_id": .string(dispatch.work.submission.submissionId)])
        }
        verifier.verify(dispatch.work.submission) { outcome in
            self.work.async { self.roundEnded(dispatch, outcome: outcome, started: started) }
        }
    }

    private func roundEnded(
        _ dispatch: DispatchState<VerificationJob>.Dispatch, outcome: VerificationOutcome, started: UInt64
    ) {
        let now = clock.monotonicNanoseconds()
        metrics.roundDuration.observe(Double(now &- started) / 1e9)
        metrics.roundEnded(outcome)
        let (step, breakerOpen) = state.withLock { state in
            let step = state.appleFinished(dispatch, appleAnswered: outcome.appleAnswered, nowNs: now)
            return (step, state.breaker.isOpen)
        }
        perform(step)
        guard stillOwned(dispatch.ticket) else {
            logger.debug(
                "round ended after its partition was given up: no output, the new owner verifies it again",
                ["submission_id": .string(dispatch.work.submission.submissionId)])
            return
        }
        let job = dispatch.work
        let (records, disposition) = router.route(
            outcome, job: job, breakerOpen: breakerOpen, nowMs: clock.wallMilliseconds())
        log(outcome, job: job, disposition: disposition)
        publish(
            PublishGroup(
                ticket: dispatch.ticket, records: records, disposition: disposition,
                submittedAtMs: job.submission.submittedAtMs))
    }

    private func log(_ outcome: VerificationOutcome, job: VerificationJob, disposition: RoundDisposition) {
        let id = job.submission.submissionId
        switch (outcome, disposition) {
        case (.configurationError(let failure), _):
            metrics.configErrors.increment()
            logger.error(
                "Apple rejected our configuration: fix the settings (APPLE_SHARED_SECRET for 21004)",
                [
                    "submission_id": .string(id), "apple_status": .int(failure.appleStatus ?? -1),
                    "problem": .string(failure.message),
                ])
        case (.unavailable(let failure), .retry(let round, let notBefore)):
            logger.info(
                "no verdict from Apple this round, retrying later",
                [
                    "submission_id": .string(id), "round": .int(round), "attempts": .int(failure.attempts),
                    "apple_status": .int(failure.appleStatus ?? -1), "error": .string(failure.message),
                    "not_before_ms": .int(Int(notBefore)),
                ])
        case (.unavailable(let failure), _):
            logger.warning(
                "no verdict from Apple after the last round",
                [
                    "submission_id": .string(id), "apple_status": .int(failure.appleStatus ?? -1),
                    "error": .string(failure.message),
                ])
        case (.verdict(let verdict), _):
            if logger.isEnabled(.debug) {
                logger.debug(
                    "verdict",
                    [
                        "submission_id": .string(id), "outcome": .string(verdict.outcome.rawValue),
                        "reason": .string(verdict.reason?.rawValue ?? "none"),
                    ])
            }
        }
    }

    /// Whether the ticket's partition is still ours in the ticket's assignment (revoking or draining included).
    /// When it is not, the work is abandoned without output: its offset was never stored past it, so the partition's
    /// owner now reads it again, and writing outputs here too would start a second retry chain whose final result
    /// could disagree with the owner's. The abandonment was counted when the partition was given up (or, for a
    /// ticket still tracked, is counted by the drop here).
    private func stillOwned(_ ticket: MessageTicket) -> Bool {
        let (owned, step) = state.withLock { state -> (Bool, DispatchState<VerificationJob>.Step?) in
            state.isOwned(ticket) ? (true, nil) : (false, state.abandon(ticket))
        }
        if let step { perform(step) }
        return owned
    }

    // MARK: Publishing

    private func publish(_ group: PublishGroup) {
        if group.records.isEmpty {
            finished(group)
            return
        }
        for record in group.records {
            publish(record, in: group, attempt: 0)
        }
    }

    private func publish(_ record: OutgoingRecord, in group: PublishGroup, attempt: Int) {
        publisher.publish(record) { failure in
            guard let failure else {
                self.metrics.publishedRecord(record.kind)
                self.publishHealth.acknowledged(topic: record.topic)
                if group.acknowledge() { self.finished(group) }
                return
            }
            self.publishFailed(record, in: group, attempt: attempt, failure: failure)
        }
    }

    /// A record was not written. Transient failures are retried with backoff. A record too large for Kafka is
    /// rewritten smaller (a DLQ record without the original bytes; a retry record becomes the submission's final
    /// failure). A fatal producer error makes the process unhealthy: the work is abandoned (its offset is never
    /// stored, so it is redelivered after the restart). Other failures (authorization, unknown topic) are retried
    /// too, since an operator can fix them, but counted, logged as errors and make the process not ready.
    private func publishFailed(_ record: OutgoingRecord, in group: PublishGroup, attempt: Int, failure: PublishFailure)
    {
        metrics.publishFailed(record.kind, retriable: failure.isRetriable)
        let owned = state.withLock { $0.isOwned(group.ticket) }
        guard owned, !failure.isFatal else {
            // Not owned: the partition went to another consumer, which reads the message again and writes its
            // outputs (results are idempotent), so dropping this one loses nothing.
            if failure.isFatal, publishHealth.fatalFailure(failure.message) {
                logger.error(
                    "fatal Kafka producer error: the verifier must be restarted (/healthz fails); unfinished work is "
                        + "redelivered",
                    [
                        "topic": .string(record.topic), "code": .int(Int(failure.code?.rawValue ?? 0)),
                        "error": .string(failure.message),
                    ])
            }
            if group.abandon() { perform(state.withLock { $0.abandon(group.ticket) }) }
            return
        }
        if failure.isMessageTooLarge, rewriteOversized(record, in: group, failure: failure) { return }
        let fields: KeyValuePairs<String, LogValue> = [
            "kind": .string(record.kind.rawValue), "topic": .string(record.topic), "attempt": .int(attempt + 1),
            "code": .int(Int(failure.code?.rawValue ?? 0)), "bytes": .int(record.value.count), "error": .string(failure.message),
        ]
        if failure.isRetriable {
            if !failure.isQueueFull || attempt % 100 == 0 { logger.warning("publishing failed, retrying", fields) }
        } else {
            let inARow = publishHealth.permanentFailure(topic: record.topic, code: failure.code)
            if attempt < 3 || attempt % 20 == 0 || inARow == publishHealth.notReadyAfter {
                logger.error(
                    "publishing failed and will not succeed until the topic or its ACLs are fixed; retrying", fields)
            }
        }
        clock.schedule(after: configuration.publishBackoff.wait(afterFailures: attempt + 1)) {
            self.publish(record, in: group, attempt: attempt + 1)
        }
    }

    /// Replaces a record Kafka refused as too large. Returns false when there is nothing smaller to write.
    private func rewriteOversized(_ record: OutgoingRecord, in group: PublishGroup, failure: PublishFailure) -> Bool {
        let factory = router.factory
        if let smaller = factory.deadLetterWithoutOriginal(record) {
            logger.warning(
                "DLQ record too large for Kafka: writing it without the original message",
                [
                    "topic": .string(record.topic), "bytes": .int(record.value.count),
                    "code": .int(Int(failure.code?.rawValue ?? 0)),
                ])
            publish(smaller, in: group, attempt: 0)
            return true
        }
        if let records = factory.finalFailure(
            ofOversizedRetry: record, source: group.ticket, nowMs: clock.wallMilliseconds())
        {
            logger.error(
                "retry record too large for Kafka: the submission fails with apple_unavailable",
                [
                    "submission_id": .string(record.header(MessageHeaders.submissionId) ?? ""),
                    "topic": .string(record.topic), "bytes": .int(record.value.count),
                ])
            // The retry record was the group's only output: the failure records replace the whole group.
            publish(
                PublishGroup(
                    ticket: group.ticket, records: records, disposition: .result(.failed, .appleUnavailable),
                    submittedAtMs: group.submittedAtMs))
            return true
        }
        return false
    }

    private func finished(_ group: PublishGroup) {
        switch group.disposition {
        case .result(let outcome, let reason):
            metrics.resultWritten(outcome, reason)
            if let submitted = group.submittedAtMs, submitted > 0 {
                metrics.resultLatency.observe(Double(clock.wallMilliseconds() - submitted) / 1000)
            }
        case .retry:
            metrics.retries.increment()
        case nil:
            break
        }
        switch group.notification {
        case .event(let type, let notificationType, let receivedAtMs):
            metrics.notificationEventWritten(type, notificationType: notificationType)
            if receivedAtMs > 0 {
                metrics.notificationLag.observe(Double(max(clock.wallMilliseconds() - receivedAtMs, 0)) / 1000)
            }
        case .rejected(let reason):
            metrics.notificationRejected(reason)
        case nil:
            break
        }
        for record in group.records {
            if case .deadLetter(let dead) = record.payload { metrics.deadLetterWritten(dead.reason) }
        }
        perform(state.withLock { $0.complete(group.ticket) })
    }

    // MARK: Actions

    private func perform(_ step: DispatchState<VerificationJob>.Step) {
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
