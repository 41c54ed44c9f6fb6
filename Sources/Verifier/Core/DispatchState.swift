import Kafka
import ServiceSupport

/// The verifier's per-process dispatch bookkeeping: which messages are admitted, which wait for an Apple slot,
/// which partitions must be paused, whether the consumer's intake is held, which offsets may be stored. A pure state
/// machine: every transition returns a `Step` saying what to do; the owner performs it outside its lock.
///
/// Invariants:
/// - An offset is only ever stored as "one past the contiguous completed prefix" of what was admitted in the current
///   assignment of its partition (`PartitionOffsetTracker`), so a message is counted done only after `complete`.
/// - Every admitted ticket ends exactly once: `complete`, or dropped (revoke, stop, stale ticket). Dropped work is
///   never stored past, so it is redelivered.
/// - At most `limits.maxInFlight` rounds are at Apple while the breaker is closed; one probe at a time while open.
/// - A partition is paused while its window is full and while it holds a retry record that is not yet due; every
///   partition is paused while the breaker is open with work waiting, and once stopping. The partitions of the
///   direct topics (processed without Apple: notifications) are also paused while `limits.directLimit` of their
///   messages are admitted and not finished.
/// - While too many admitted submissions wait for Apple the consumer's intake is held (`isIntakeHeld`), not its
///   partitions paused: a pause would make librdkafka drop what it prefetched and fetch it again.
struct DispatchState<Work: Sendable>: Sendable {
    /// A round to start at Apple. `isProbe` marks the single call allowed while the breaker is open.
    struct Dispatch: Sendable {
        let ticket: MessageTicket
        let work: Work
        let isProbe: Bool
    }

    /// What a transition asks the owner to do.
    struct Step: Sendable {
        var dispatches: [Dispatch] = []
        var controls: ControlBatch?
        var breakerTransition: AppleCircuitBreaker.Transition?
        /// Tickets this transition ended without completing them (their work must be abandoned).
        var dropped: [MessageTicket] = []
        /// A partition whose consumer position went backwards (see `admit`).
        var positionReset: PositionReset?
    }

    /// The consumer delivered an offset below one already admitted in the same assignment: librdkafka reset the
    /// partition's position (`auto.offset.reset` after `OFFSET_OUT_OF_RANGE`, for example a truncated log).
    struct PositionReset: Sendable, Equatable {
        let partition: TopicPartition
        /// The greatest offset admitted before the reset.
        let previousOffset: Int64
        /// The offset the partition restarted at.
        let newOffset: Int64
        /// Messages of the old position still in flight (decoding, at Apple, being written): abandoned, their
        /// outputs are not written (their tickets are no longer owned) and their offsets never stored.
        let abandonedInFlight: Int
    }

    private struct Waiting: Sendable {
        let ticket: MessageTicket
        let work: Work
    }

    let limits: DispatchLimits
    private(set) var breaker: AppleCircuitBreaker
    private(set) var appleInFlight = 0
    private(set) var isStopping = false
    private var partitions: [TopicPartition: PartitionDispatchState] = [:]
    private var waiting = FIFOQueue<Waiting>()
    /// Too many admitted submissions wait for Apple (the pending gate): the consumer's intake is held, not paused (a
    /// pause would make librdkafka drop what it prefetched and fetch it again, several times a second in a backlog).
    /// Every change is told to the consumer by the reconcile that makes it.
    private(set) var isIntakeHeld = false
    /// Every partition was paused, and none resumed since: librdkafka's fetchers may be idle, so the next resume
    /// wakes them (`ControlBatch.wakesFetchers`).
    private var fetchersMayBeIdle = false
    /// Topics whose messages never wait for Apple (notifications); their live messages are bounded together.
    let directTopics: Set<String>
    private var directGate = false
    private var nextEpoch: UInt64 = 1
    /// Control batches emitted so far (each transition with control actions emits one, numbered from 1).
    private(set) var controlSequence: UInt64 = 0

    init(
        limits: DispatchLimits, breaker: AppleCircuitBreaker = AppleCircuitBreaker(), directTopics: Set<String> = []
    ) {
        self.limits = limits
        self.breaker = breaker
        self.directTopics = directTopics
    }

    // MARK: Queries

    /// Messages admitted and waiting for an Apple slot.
    var waitingForApple: Int { waiting.count }

    /// The partitions currently assigned (revoking ones included).
    var assignedPartitions: [TopicPartition] { Array(partitions.keys) }

    /// The partitions the consumer was told to pause.
    var pausedPartitions: [TopicPartition] {
        partitions.compactMap { $0.value.toldPaused == true ? $0.key : nil }
    }

    /// Admitted messages not yet completed or dropped, in `partitions` (all when nil).
    func liveCount(in selected: [TopicPartition]? = nil) -> Int {
        if let selected {
            return selected.reduce(0) { $0 + (partitions[$1]?.live ?? 0) }
        }
        return partitions.values.reduce(0) { $0 + $1.live }
    }

    /// Messages held by the partition's offset tracker (outstanding plus completed behind an outstanding one).
    func heldCount(_ partition: TopicPartition) -> Int {
        partitions[partition]?.tracker.held ?? 0
    }

    /// Whether `ticket`'s partition is still assigned in the ticket's epoch (revoking or stopping included): its
    /// completion can still store an offset, so a failed publish is worth retrying.
    func isOwned(_ ticket: MessageTicket) -> Bool {
        partitions[ticket.partition]?.epoch == ticket.epoch
    }

    /// Whether `ticket` belongs to the current assignment of its partition and is not being revoked.
    func isCurrent(_ ticket: MessageTicket) -> Bool {
        guard let state = partitions[ticket.partition] else { return false }
        return state.epoch == ticket.epoch && !state.revoking && !isStopping
    }

    // MARK: Assignment

    /// New partitions: fresh offset tracking in a new epoch. Each is explicitly resumed or paused, so no pause
    /// left over from an earlier assignment survives.
    mutating func assign(_ assigned: [TopicPartition], nowNs: UInt64) -> Step {
        for partition in assigned {
            partitions[partition] = PartitionDispatchState(epoch: nextEpoch)
            nextEpoch += 1
        }
        var step = Step()
        reconcile(into: &step)
        return step
    }

    /// Starts revoking: nothing more of these partitions is admitted or dispatched; their waiting and held messages
    /// are dropped at once. The owner then waits (bounded) until `liveCount(in:)` is zero and calls `finishRevoke`.
    mutating func beginRevoke(_ revoked: [TopicPartition]) -> Step {
        var step = Step()
        let set = Set(revoked)
        for partition in revoked {
            guard var state = partitions[partition] else { continue }
            state.revoking = true
            state.live -= state.heldOffsets.count
            step.dropped += state.heldOffsets.map {
                MessageTicket(partition: partition, epoch: state.epoch, offset: $0)
            }
            state.heldOffsets.removeAll()
            partitions[partition] = state
        }
        step.dropped += removeWaiting { set.contains($0.partition) }
        reconcile(into: &step)
        return step
    }

    /// Forgets revoked partitions: late completions of their tickets are ignored.
    mutating func finishRevoke(_ revoked: [TopicPartition]) {
        for partition in revoked { partitions[partition] = nil }
    }

    // MARK: Messages

    /// A message was consumed. Returns its ticket, or nil when it must be ignored (partition not assigned or being
    /// revoked, stopping, or the offset admitted last, delivered again).
    ///
    /// An offset below the last one admitted means the consumer's position was reset backwards: the partition's
    /// tracking starts afresh in a new epoch at that offset (`Step.positionReset`), and everything admitted at the
    /// old position is dropped, so no offset is ever stored past the messages the consumer now delivers again.
    mutating func admit(_ partition: TopicPartition, offset: Int64) -> (MessageTicket?, Step) {
        var step = Step()
        guard !isStopping, var index = partitions.index(forKey: partition), !partitions.values[index].revoking else {
            return (nil, step)
        }
        if let last = partitions.values[index].tracker.lastTracked, offset < last {
            resetPosition(partition, previousOffset: last, newOffset: offset, into: &step)
            guard let fresh = partitions.index(forKey: partition) else { return (nil, step) }
            index = fresh
        }
        // Mutated in place through the index: a copy of the entry would make the tracker copy its storage.
        guard partitions.values[index].tracker.track(offset) else {
            return (nil, step)
        }
        partitions.values[index].live += 1
        let epoch = partitions.values[index].epoch
        reconcile(into: &step)
        return (MessageTicket(partition: partition, epoch: epoch, offset: offset), step)
    }

    /// A retry record that is not yet due: its partition stays paused until `release`.
    mutating func hold(_ ticket: MessageTicket) -> Step {
        var step = Step()
        guard isCurrent(ticket) else {
            drop(ticket, into: &step)
            return step
        }
        partitions[ticket.partition]?.heldOffsets.insert(ticket.offset)
        reconcile(into: &step)
        return step
    }

    /// A held record became due: it queues for Apple like a fresh message. Ignored when the hold was dropped.
    mutating func release(_ ticket: MessageTicket, work: Work, nowNs: UInt64) -> Step {
        var step = Step()
        guard isCurrent(ticket), partitions[ticket.partition]?.heldOffsets.remove(ticket.offset) != nil else {
            return step
        }
        queueForApple(ticket, work: work, nowNs: nowNs, into: &step)
        return step
    }

    /// A decoded submission needs a round at Apple: dispatched now when a slot is free, else queued.
    mutating func enqueue(_ ticket: MessageTicket, work: Work, nowNs: UInt64) -> Step {
        var step = Step()
        guard isCurrent(ticket) else {
            drop(ticket, into: &step)
            return step
        }
        queueForApple(ticket, work: work, nowNs: nowNs, into: &step)
        return step
    }

    /// Queues `work` behind what already waits, dispatches what the limits allow, and re-evaluates pauses.
    private mutating func queueForApple(_ ticket: MessageTicket, work: Work, nowNs: UInt64, into step: inout Step) {
        waiting.append(Waiting(ticket: ticket, work: work))
        dispatchWaiting(nowNs: nowNs, into: &step)
        reconcile(into: &step)
    }

    /// A round at Apple ended. `appleAnswered` is false when it ended without a verdict (Apple unavailable); it
    /// feeds the breaker. Frees the slot and dispatches what waits.
    mutating func appleFinished(_ dispatch: Dispatch, appleAnswered: Bool, nowNs: UInt64) -> Step {
        var step = Step()
        appleInFlight -= 1
        step.breakerTransition = breaker.record(success: appleAnswered, nowNs: nowNs)
        if dispatch.isProbe, !appleAnswered { breaker.probeFailed(nowNs: nowNs) }
        dispatchWaiting(nowNs: nowNs, into: &step)
        reconcile(into: &step)
        return step
    }

    /// Every output of the ticket's message was acknowledged: the offset may be stored once the prefix is complete.
    mutating func complete(_ ticket: MessageTicket) -> Step {
        var step = Step()
        guard let index = partitions.index(forKey: ticket.partition), partitions.values[index].epoch == ticket.epoch,
            partitions.values[index].tracker.isOutstanding(ticket.offset)
        else { return step }
        partitions.values[index].live -= 1
        let next = partitions.values[index].tracker.complete(ticket.offset)
        var actions: [ControlAction] = []
        if let next { actions.append(.storeOffset(ticket.partition, nextOffset: next, epoch: ticket.epoch)) }
        reconcile(into: &step, extra: actions)
        return step
    }

    /// The ticket's work was abandoned without an output (its partition is being revoked, or stopping).
    mutating func abandon(_ ticket: MessageTicket) -> Step {
        var step = Step()
        drop(ticket, into: &step)
        reconcile(into: &step)
        return step
    }

    /// Time passed: a probe may be due while the breaker is open.
    mutating func tick(nowNs: UInt64) -> Step {
        var step = Step()
        dispatchWaiting(nowNs: nowNs, into: &step)
        reconcile(into: &step)
        return step
    }

    /// Shutdown: pause everything, admit and dispatch nothing more, drop what waits or is held.
    mutating func stop() -> Step {
        var step = Step()
        isStopping = true
        for (partition, var state) in partitions {
            state.live -= state.heldOffsets.count
            step.dropped += state.heldOffsets.map {
                MessageTicket(partition: partition, epoch: state.epoch, offset: $0)
            }
            state.heldOffsets.removeAll()
            partitions[partition] = state
        }
        step.dropped += removeWaiting { _ in true }
        reconcile(into: &step)
        return step
    }

    // MARK: Internals

    /// Replaces the partition's state by a fresh one in a new epoch (keeping what the consumer was told about
    /// pausing), dropping its held and waiting messages; those in flight become stale tickets.
    private mutating func resetPosition(
        _ partition: TopicPartition, previousOffset: Int64, newOffset: Int64, into step: inout Step
    ) {
        guard var old = partitions[partition] else { return }
        step.dropped += old.heldOffsets.map { MessageTicket(partition: partition, epoch: old.epoch, offset: $0) }
        old.live -= old.heldOffsets.count
        old.heldOffsets.removeAll()
        partitions[partition] = old
        step.dropped += removeWaiting { $0.partition == partition }
        let inFlight = partitions[partition]?.live ?? 0
        var fresh = PartitionDispatchState(epoch: nextEpoch)
        nextEpoch += 1
        fresh.toldPaused = old.toldPaused
        partitions[partition] = fresh
        step.positionReset = PositionReset(
            partition: partition, previousOffset: previousOffset, newOffset: newOffset, abandonedInFlight: inFlight)
    }

    private mutating func drop(_ ticket: MessageTicket, into step: inout Step) {
        guard let index = partitions.index(forKey: ticket.partition), partitions.values[index].epoch == ticket.epoch,
            partitions.values[index].tracker.isOutstanding(ticket.offset)
        else { return }
        partitions.values[index].live -= 1
        step.dropped.append(ticket)
    }

    /// Removes waiting entries matching `predicate`, decrementing their partitions' live counts.
    private mutating func removeWaiting(where predicate: (MessageTicket) -> Bool) -> [MessageTicket] {
        let removed = waiting.removeAll { predicate($0.ticket) }
        for entry in removed { partitions[entry.ticket.partition]?.live -= 1 }
        return removed.map(\.ticket)
    }

    private mutating func popWaiting() -> Waiting? {
        waiting.removeFirst()
    }

    private mutating func dispatchWaiting(nowNs: UInt64, into step: inout Step) {
        guard !isStopping else { return }
        while waitingForApple > 0 {
            if breaker.isOpen {
                guard breaker.takeProbe(nowNs: nowNs), let entry = popWaiting() else { return }
                appleInFlight += 1
                step.dispatches.append(Dispatch(ticket: entry.ticket, work: entry.work, isProbe: true))
                return
            }
            guard appleInFlight < limits.maxInFlight, let entry = popWaiting() else { return }
            appleInFlight += 1
            step.dispatches.append(Dispatch(ticket: entry.ticket, work: entry.work, isProbe: false))
        }
    }

    /// Computes which partitions should be paused and emits the changes (plus `extra`) as one numbered batch.
    private mutating func reconcile(into step: inout Step, extra: [ControlAction] = []) {
        let waitingCount = waitingForApple
        let wasIntakeHeld = isIntakeHeld
        if waitingCount >= limits.pendingLimit {
            isIntakeHeld = true
        } else if waitingCount <= limits.pendingResumeMark {
            isIntakeHeld = false
        }
        let pauseAll = isStopping || (breaker.isOpen && waitingCount > 0)
        if pauseAll { fetchersMayBeIdle = true }
        if !directTopics.isEmpty {
            let direct = partitions.reduce(0) { $0 + (directTopics.contains($1.key.topic) ? $1.value.live : 0) }
            if direct >= limits.directLimit {
                directGate = true
            } else if direct <= limits.directResumeMark {
                directGate = false
            }
        }
        var actions = extra
        var index = partitions.startIndex
        while index != partitions.endIndex {
            defer { index = partitions.index(after: index) }
            guard !partitions.values[index].revoking else { continue }
            let held = partitions.values[index].tracker.held
            if held >= limits.partitionWindow {
                partitions.values[index].windowFull = true
            } else if held <= limits.partitionResumeMark {
                partitions.values[index].windowFull = false
            }
            let shouldPause =
                pauseAll || partitions.values[index].windowFull || !partitions.values[index].heldOffsets.isEmpty
                || (directGate && directTopics.contains(partitions.keys[index].topic))
            if partitions.values[index].toldPaused != shouldPause {
                actions.append(shouldPause ? .pause(partitions.keys[index]) : .resume(partitions.keys[index]))
                partitions.values[index].toldPaused = shouldPause
            }
        }
        let intakeChange: Bool? = isIntakeHeld != wasIntakeHeld ? isIntakeHeld : nil
        guard !actions.isEmpty || intakeChange != nil else { return }
        controlSequence += 1
        let resumes = actions.contains { if case .resume = $0 { true } else { false } }
        let wakes = resumes && fetchersMayBeIdle
        if wakes { fetchersMayBeIdle = false }
        step.controls = ControlBatch(
            sequence: controlSequence, actions: actions, wakesFetchers: wakes, holdsIntake: intakeChange)
    }
}
