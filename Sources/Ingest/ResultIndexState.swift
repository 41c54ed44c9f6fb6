import ReceiptModel
import ServiceSupport

/// The result index's bookkeeping, as a value: results by `submission_id`, the pending marks of writes, and the
/// waiting requests. Pure: no lock, no clock, no timer. Every transition takes the time it happens at and returns
/// what the owner (`ResultIndex`) must do outside its lock: the completions to run, the timer to set.
///
/// `Completion` is what a waiter is ended with (the owner stores its closure; a test stores a name). The invariants
/// are those `ResultIndex` documents.
struct ResultIndexState<Completion: Sendable>: Sendable {
    /// A result message, decoded as far as the index needs it.
    struct ResultMessage: Sendable {
        let value: [UInt8]
        let submissionId: String
        let outcome: Outcome
        let clientId: String?
        let fingerprint: String?
        /// The Kafka message time, or the result's `verified_at_ms` when the message has none.
        let timestampMs: Int64
    }

    /// A timer the owner must set: after `delayMs`, call `expireDueWaiters(nowMs:generation:)` with `generation`.
    struct TimerRequest: Sendable, Equatable {
        let delayMs: Int
        let generation: UInt64
    }

    /// What `addWaiter` did.
    enum WaitRegistration: Sendable {
        /// A result the caller may see is already here: answer it now (nothing was registered).
        case answerNow([UInt8])
        /// Waiting stopped (draining): end the wait now.
        case stopped
        /// Registered; set `timer` when one is given (the new waiter is due before the current timer).
        case registered(timer: TimerRequest?)
    }

    private struct Entry {
        let value: [UInt8]
        let timestampMs: Int64
        /// Matches this entry's place in `resultOrder` (a replaced entry leaves a stale one).
        let sequence: UInt64
        let outcome: Outcome
        let clientId: String?
        let fingerprint: String?

        /// `verified` and `rejected` are final; `failed` is not (a replay or a fresh attempt may follow).
        var isFinal: Bool { outcome != .failed }
    }

    private struct PendingMark {
        var sinceMs: Int64
        /// Matches this mark's place in `pendingOrder`; also when it was reserved.
        let sequence: UInt64
        let fingerprint: String?
        let clientId: String?
        /// Kafka acknowledged a write of it (only then is it "pending" to lookups).
        var acknowledged: Bool
        /// Writes reserved and not reported yet.
        var writing: Int
    }

    private struct Waiter {
        let token: UInt64
        let caller: Caller
        let completion: Completion
    }

    let limits: ResultIndex.Limits
    private var results: [String: Entry] = [:]
    /// Insertion order of `results`; entries whose sequence no longer matches `results` are stale and skipped.
    private var resultOrder = FIFOQueue<(id: String, sequence: UInt64)>()
    private var pending: [String: PendingMark] = [:]
    /// Marking order; entries whose sequence no longer matches `pending` are stale and skipped.
    private var pendingOrder = FIFOQueue<(id: String, sequence: UInt64)>()
    private var waiters: [String: [Waiter]] = [:]
    private var waiterDeadlines = WaiterDeadlines()
    /// When the current wait timer fires (nil: none set), and its number: a timer superseded by an earlier one
    /// still fires, but only the current one sets the next.
    private var timerDueMs: Int64?
    private var timerGeneration: UInt64 = 0
    private var nextSequence: UInt64 = 0
    /// Set by `stopWaiting()`: new waits end at once.
    private var waitingStopped = false
    private var counters = ResultIndex.Statistics()

    init(limits: ResultIndex.Limits) {
        self.limits = limits
    }

    /// Current sizes and counters.
    var statistics: ResultIndex.Statistics {
        var statistics = counters
        statistics.entries = results.count
        statistics.pending = pending.count
        return statistics
    }

    // MARK: - Results

    /// Indexes a result message at `nowMs`; returns what happened and the completions of the waiters that may see it.
    mutating func record(_ message: ResultMessage, nowMs: Int64) -> (ResultIndex.RecordOutcome, [Completion]) {
        let id = message.submissionId
        evictExpired(nowMs: nowMs)
        if message.timestampMs < nowMs - limits.maxAgeMs {
            counters.expired += 1
            return (.expired(submissionId: id), [])
        }
        var replacing = false
        if let existing = results[id] {
            let isLive = existing.timestampMs >= nowMs - limits.maxAgeMs
            if isLive, existing.isFinal {
                counters.duplicates += 1
                return (.duplicate(submissionId: id), [])
            }
            // Expired but not evicted yet (behind a newer entry), or a failed result: the new one replaces it.
            results[id] = nil
            counters.bytes -= existing.value.count
            if isLive {
                replacing = true
                counters.replaced += 1
            } else {
                counters.evictedForAge += 1
            }
        }
        let sequence = takeSequence()
        results[id] = Entry(
            value: message.value, timestampMs: message.timestampMs, sequence: sequence, outcome: message.outcome,
            clientId: message.clientId, fingerprint: message.fingerprint)
        resultOrder.append((id, sequence))
        counters.bytes += message.value.count
        if !replacing { counters.indexed += 1 }
        pending[id] = nil
        // Waiters that may not see this result keep waiting (their own submission's result may follow).
        var completed: [Completion] = []
        if let waiting = waiters[id] {
            var hidden: [Waiter] = []
            for waiter in waiting {
                if waiter.caller.maySee(clientId: message.clientId) {
                    completed.append(waiter.completion)
                } else {
                    hidden.append(waiter)
                }
            }
            waiters[id] = hidden.isEmpty ? nil : hidden
            counters.waiters -= completed.count
        }
        evictOverLimits()
        compactPendingOrder()
        let outcome: ResultIndex.RecordOutcome = replacing
            ? .replaced(submissionId: id, waitersCompleted: completed.count)
            : .indexed(submissionId: id, waitersCompleted: completed.count)
        return (outcome, completed)
    }

    /// Counts a message that is not a result this version understands.
    mutating func countUndecodable() {
        counters.undecodable += 1
    }

    /// What `caller` may know about `id` at `nowMs` (see `ResultIndex.lookup`).
    func lookup(_ id: String, caller: Caller, nowMs: Int64) -> ResultIndex.Lookup {
        let oldestAllowed = nowMs - limits.maxAgeMs
        let entry = results[id].flatMap { $0.timestampMs >= oldestAllowed ? $0 : nil }
        let mark = pending[id].flatMap { $0.sinceMs >= oldestAllowed && $0.acknowledged ? $0 : nil }
        if let entry, entry.isFinal || mark == nil {
            return caller.maySee(clientId: entry.clientId) ? .result(entry.value) : .unknown
        }
        if let mark {
            return caller.maySee(clientId: mark.clientId) ? .pending : .unknown
        }
        return .unknown
    }

    // MARK: - Writing submissions

    /// Decides about a posted submission (see `ResultIndex.admit`) and reserves the id when it is to be written.
    mutating func admit(_ id: String, fingerprint: String, caller: Caller, nowMs: Int64) -> ResultIndex.Admission {
        evictExpired(nowMs: nowMs)
        let oldestAllowed = nowMs - limits.maxAgeMs
        if let entry = results[id], entry.timestampMs >= oldestAllowed {
            guard caller.maySee(clientId: entry.clientId) else { return .foreign }
            if entry.isFinal {
                return entry.fingerprint == fingerprint ? .answer(entry.value) : .conflict
            }
            if let previous = entry.fingerprint, previous != fingerprint { return .conflict }
        }
        if var mark = pending[id], mark.sinceMs >= oldestAllowed {
            guard caller.maySee(clientId: mark.clientId) else { return .foreign }
            guard mark.fingerprint == fingerprint else { return .conflict }
            mark.writing += 1
            pending[id] = mark
            return .write(
                ResultIndex.Reservation(
                    submissionId: id, fingerprint: fingerprint, clientId: caller.clientId, sequence: mark.sequence))
        }
        let sequence = takeSequence()
        pending[id] = PendingMark(
            sinceMs: nowMs, sequence: sequence, fingerprint: fingerprint, clientId: caller.clientId,
            acknowledged: false, writing: 1)
        pendingOrder.append((id, sequence))
        evictOverLimits()
        compactPendingOrder()
        return .write(
            ResultIndex.Reservation(
                submissionId: id, fingerprint: fingerprint, clientId: caller.clientId, sequence: sequence))
    }

    /// Kafka acknowledged the reserved write at `nowMs`: the id is pending, unless a result came since.
    mutating func accepted(_ reservation: ResultIndex.Reservation, nowMs: Int64) {
        let id = reservation.submissionId
        if var mark = pending[id] {
            mark.writing = max(0, mark.writing - 1)
            mark.acknowledged = true
            mark.sinceMs = nowMs
            pending[id] = mark
            return
        }
        // The mark went (a result arrived, or it was evicted): mark again only if no result came since.
        if let entry = results[id], entry.sequence > reservation.sequence || entry.isFinal { return }
        let sequence = takeSequence()
        pending[id] = PendingMark(
            sinceMs: nowMs, sequence: sequence, fingerprint: reservation.fingerprint, clientId: reservation.clientId,
            acknowledged: true, writing: 0)
        pendingOrder.append((id, sequence))
        evictExpired(nowMs: nowMs)
        evictOverLimits()
        compactPendingOrder()
    }

    /// The reserved write did not happen: a mark no write acknowledged and none is still writing goes away.
    mutating func abandoned(_ reservation: ResultIndex.Reservation) {
        let id = reservation.submissionId
        guard var mark = pending[id], mark.sequence <= reservation.sequence else { return }
        mark.writing = max(0, mark.writing - 1)
        if mark.writing == 0, !mark.acknowledged {
            pending[id] = nil
        } else {
            pending[id] = mark
        }
    }

    // MARK: - Waiting

    /// Registers a waiter for `id` due `timeoutMs` after `nowMs`, unless a result `caller` may see is already here
    /// or waiting stopped.
    mutating func addWaiter(
        for id: String, caller: Caller, timeoutMs: Int, nowMs: Int64, completion: Completion
    ) -> WaitRegistration {
        if case .result(let value) = lookup(id, caller: caller, nowMs: nowMs) { return .answerNow(value) }
        if waitingStopped { return .stopped }
        let timeoutMs = max(0, timeoutMs)
        let token = takeSequence()
        waiters[id, default: []].append(Waiter(token: token, caller: caller, completion: completion))
        counters.waiters += 1
        let dueMs = nowMs + Int64(timeoutMs)
        waiterDeadlines.insert(.init(dueMs: dueMs, id: id, token: token))
        // One timer, for the earliest deadline: set a new one only when this waiter is due before it.
        if let timerDueMs, timerDueMs <= dueMs { return .registered(timer: nil) }
        timerDueMs = dueMs
        timerGeneration += 1
        return .registered(timer: TimerRequest(delayMs: timeoutMs, generation: timerGeneration))
    }

    /// The wait timer `generation` fired at `nowMs`: the waiters whose time has come end; the current timer then
    /// asks for the next one, for the earliest deadline left (at least 1 ms ahead: a timer that fired a little
    /// before the clock reached the deadline tries again).
    mutating func expireDueWaiters(nowMs: Int64, generation: UInt64) -> (expired: [Completion], next: TimerRequest?) {
        var expired: [Completion] = []
        for deadline in waiterDeadlines.popDue(nowMs: nowMs) {
            guard var list = waiters[deadline.id], let position = list.firstIndex(where: { $0.token == deadline.token })
            else { continue }  // answered by its verdict, or by stopWaiting
            expired.append(list.remove(at: position).completion)
            waiters[deadline.id] = list.isEmpty ? nil : list
            counters.waiters -= 1
        }
        guard generation == timerGeneration else { return (expired, nil) }  // superseded
        timerDueMs = nil
        guard let earliest = waiterDeadlines.earliestMs else { return (expired, nil) }
        timerDueMs = earliest
        timerGeneration += 1
        return (expired, TimerRequest(delayMs: Int(max(1, earliest - nowMs)), generation: timerGeneration))
    }

    /// Ends every waiter (their completions are returned) and every later wait at once. Idempotent.
    mutating func stopWaiting() -> [Completion] {
        let ended = waiters.values.flatMap { $0.map(\.completion) }
        waitingStopped = true
        waiters = [:]
        waiterDeadlines.removeAll()
        counters.waiters = 0
        return ended
    }

    // MARK: - Bounds

    private mutating func takeSequence() -> UInt64 {
        defer { nextSequence += 1 }
        return nextSequence
    }

    /// Removes results and pending marks older than the age limit from the front (oldest inserted first). An older
    /// entry behind a newer one stays until it reaches the front; `lookup` already treats it as gone.
    private mutating func evictExpired(nowMs: Int64) {
        let oldestAllowed = nowMs - limits.maxAgeMs
        while let (id, sequence) = resultOrder.first {
            if let entry = results[id], entry.sequence == sequence {
                guard entry.timestampMs < oldestAllowed else { break }
                results[id] = nil
                counters.bytes -= entry.value.count
                counters.evictedForAge += 1
            }
            resultOrder.removeFirst()
        }
        while let (id, sequence) = pendingOrder.first {
            if let mark = pending[id], mark.sequence == sequence {
                guard mark.sinceMs < oldestAllowed else { break }
                pending[id] = nil
                counters.pendingEvicted += 1
            }
            pendingOrder.removeFirst()
        }
    }

    private mutating func evictOverLimits() {
        while results.count > limits.maxEntries {
            removeFirstResult()
            counters.evictedForEntries += 1
        }
        while counters.bytes > limits.maxBytes, !resultOrder.isEmpty {
            removeFirstResult()
            counters.evictedForBytes += 1
        }
        while pending.count > limits.maxPending, let (id, sequence) = pendingOrder.removeFirst() {
            if let mark = pending[id], mark.sequence == sequence {
                pending[id] = nil
                counters.pendingEvicted += 1
            }
        }
    }

    /// Removes the oldest inserted result (a stale place in the order removes nothing).
    private mutating func removeFirstResult() {
        guard let (id, sequence) = resultOrder.removeFirst(), let entry = results[id], entry.sequence == sequence
        else { return }
        results[id] = nil
        counters.bytes -= entry.value.count
    }

    /// Pending marks removed by results or abandoned writes leave stale entries in `pendingOrder`; drop them once
    /// they dominate.
    private mutating func compactPendingOrder() {
        guard pendingOrder.count > 2 * pending.count + 1024 else { return }
        let pending = self.pending
        _ = pendingOrder.removeAll { pending[$0.id]?.sequence != $0.sequence }
    }
}

