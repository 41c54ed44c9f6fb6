import AppStore
import Dispatch
import Foundation
import Kafka
import ReceiptModel
import ServiceSupport
import Synchronization

/// A message's way through the engine: triage on the work queue, a round at Apple for a submission, the outcome
/// routed to its records, and the ownership check that keeps work of a partition given up from writing anything.
extension VerificationEngine {
    func process(_ message: KafkaMessage, ticket: MessageTicket) {
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

    /// Starts a round at Apple. The round's slot is given back on the thread that delivers Apple's answer, first
    /// thing (`roundEnded`): the next waiting submission goes to Apple at once, and this one's records are routed,
    /// encoded and published after that, on the work queue (`writeOutcome`). The slot bounds calls to Apple, not
    /// writes: the offset still waits for Kafka to acknowledge every record (`finished`), so at-least-once is
    /// unchanged, and memory stays bounded by the pending gate and the partition windows.
    ///
    /// An answer given before `verify` returned (the client shut down, a deadline already past) goes through the work
    /// queue instead: freeing the slot inline would start the next round inside this one, and a run of such answers
    /// would nest one call per waiting submission.
    func startRound(_ dispatch: DispatchState<VerificationJob>.Dispatch) {
        let started = clock.monotonicNanoseconds()
        if dispatch.isProbe {
            logger.info("probing Apple", ["submission_id": .string(dispatch.work.submission.submissionId)])
        }
        let call = RoundCall()
        verifier.verify(dispatch.work.submission) { outcome in
            if call.hasReturned {
                self.roundEnded(dispatch, outcome: outcome, started: started, onWorkQueue: false)
            } else {
                self.enqueue { self.roundEnded(dispatch, outcome: outcome, started: started, onWorkQueue: true) }
            }
        }
        call.markReturned()
    }

    /// Apple answered (or the round ran out of time): frees the slot and starts what waits for it, then writes the
    /// outcome, on the work queue unless already there.
    func roundEnded(
        _ dispatch: DispatchState<VerificationJob>.Dispatch, outcome: VerificationOutcome, started: UInt64,
        onWorkQueue: Bool
    ) {
        let now = clock.monotonicNanoseconds()
        metrics.roundDuration.observe(Double(now &- started) / 1e9)
        metrics.roundEnded(outcome)
        let (step, breakerOpen) = state.withLock { state in
            let step = state.appleFinished(dispatch, appleAnswered: outcome.appleAnswered, nowNs: now)
            return (step, state.breaker.isOpen)
        }
        perform(step)
        if onWorkQueue {
            writeOutcome(dispatch, outcome: outcome, breakerOpen: breakerOpen)
        } else {
            enqueue { self.writeOutcome(dispatch, outcome: outcome, breakerOpen: breakerOpen) }
        }
    }

    /// A round's records: routed from its outcome (`breakerOpen` as it was when the slot was freed) and published;
    /// nothing when the partition was given up meanwhile.
    func writeOutcome(
        _ dispatch: DispatchState<VerificationJob>.Dispatch, outcome: VerificationOutcome, breakerOpen: Bool
    ) {
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

    func log(_ outcome: VerificationOutcome, job: VerificationJob, disposition: RoundDisposition) {
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
    func stillOwned(_ ticket: MessageTicket) -> Bool {
        let (owned, step) = state.withLock { state -> (Bool, DispatchState<VerificationJob>.Step?) in
            state.isOwned(ticket) ? (true, nil) : (false, state.abandon(ticket))
        }
        if let step { perform(step) }
        return owned
    }
}

/// Whether `verify` has returned for one round: an answer arriving before that was given inside the call (or raced
/// it on another thread; either way the work queue takes it, which is always safe).
private final class RoundCall: Sendable {
    private let returned = Atomic<Bool>(false)

    var hasReturned: Bool { returned.load(ordering: .acquiring) }

    func markReturned() { returned.store(true, ordering: .releasing) }
}
