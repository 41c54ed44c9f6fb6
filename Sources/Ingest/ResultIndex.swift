import Dispatch
import ReceiptModel
import ServiceSupport
import Synchronization

/// The ingest's bounded in-memory view of `RESULTS_TOPIC`, by `submission_id`, plus the submissions this instance
/// is writing or accepted that have no result yet ("pending") and the requests waiting for a result
/// (`POST ?wait_ms=`).
///
/// Invariants:
/// - Results are stored as the exact message bytes (answered verbatim by `GET /v1/receipts/{id}`), with their
///   outcome, `client_id` and `submission_fingerprint`, at most `limits.maxEntries` of them and at most
///   `limits.maxBytes` of message bytes, each for at most `limits.maxAgeMs` after its timestamp (the Kafka message
///   time). Over a limit, the oldest inserted go first. Lookups are O(1) and never return an expired result.
/// - `verified` and `rejected` are final: a later result for the id never replaces them (a duplicate of
///   at-least-once delivery carries the same verdict). A later result replaces a `failed` one (a DLQ replay or a
///   fresh attempt after a failure must be visible). A result whose predecessor for the id has expired (but was not
///   evicted yet) replaces it.
/// - A submission id is marked when this instance starts writing it (`admit`), with its fingerprint and client:
///   conflicting or foreign resubmissions are refused from then on, also while the first is still on its way to
///   Kafka. The mark counts as "pending" for lookups only once Kafka acknowledged a write (`accepted`); a write that
///   did not happen (`abandoned`) removes a mark nobody acknowledged. Marks are bounded by `limits.maxPending` and
///   `limits.maxAgeMs` like results; a result removes its id's mark.
/// - A caller sees a result, a pending mark or a waiter's verdict only when `Caller.maySee` allows its `client_id`;
///   for anything else the index answers as if it did not know the id.
/// - Every waiter is completed exactly once: with the result when it arrives, or `.timedOut` when its time passes
///   or `stopWaiting()` is called (after which new waits end at once). Waiters hold no thread: one timer (the
///   injected `schedule`), set for the earliest waiter's deadline, ends them; a waiter answered by its verdict leaves
///   no closure behind.
/// - Completions run outside the index's lock, on the thread that recorded the result (the follower's thread), the
///   timer's thread, or the caller's thread when the result was already there.
public final class ResultIndex: Sendable {
    /// The bounds of the index.
    public struct Limits: Sendable, Equatable {
        public var maxEntries: Int
        public var maxBytes: Int
        public var maxPending: Int
        public var maxAgeMs: Int64

        public init(maxEntries: Int = 100_000, maxBytes: Int = 256 << 20, maxPending: Int = 100_000,
                    maxAgeMs: Int64 = 3_600_000) {
            self.maxEntries = max(1, maxEntries)
            self.maxBytes = max(1, maxBytes)
            self.maxPending = max(1, maxPending)
            self.maxAgeMs = max(1, maxAgeMs)
        }
    }

    /// What the index knows about a submission.
    public enum Lookup: Sendable, Equatable {
        /// The result message, exactly as it was on the topic.
        case result([UInt8])
        /// Accepted by this instance; no result yet.
        case pending
        /// Neither a result nor a pending submission (never seen, or evicted).
        case unknown
    }

    /// How a wait ended.
    public enum WaitOutcome: Sendable, Equatable {
        case verdict([UInt8])
        case timedOut
    }

    /// What the index says about a submission being posted (`admit`).
    public enum Admission: Sendable, Equatable {
        /// Write it: the id is reserved for this fingerprint and caller. Report the write with `accepted` (Kafka
        /// acknowledged it) or `abandoned` (it was not written).
        case write(Reservation)
        /// A final (`verified` / `rejected`) result with the same fingerprint exists: answer it and write nothing.
        case answer([UInt8])
        /// The id is known here (pending or with a result) with another fingerprint: 409.
        case conflict
        /// The id is known here for another client: this caller may not use it.
        case foreign
    }

    /// A write in progress, as `admit` reserved it.
    public struct Reservation: Sendable, Equatable {
        public let submissionId: String
        let fingerprint: String
        let clientId: String?
        /// The index's sequence when the reservation was made: results recorded after it are newer than the write.
        let sequence: UInt64
    }

    /// What `record` did with a message.
    public enum RecordOutcome: Sendable, Equatable {
        /// Indexed; `waitersCompleted` waiting requests got it.
        case indexed(submissionId: String, waitersCompleted: Int)
        /// Replaced an earlier `failed` result for the id; `waitersCompleted` waiting requests got it.
        case replaced(submissionId: String, waitersCompleted: Int)
        /// A final result for the id was already indexed: kept it.
        case duplicate(submissionId: String)
        /// Older than `maxAgeMs` already (read back from long ago): not indexed.
        case expired(submissionId: String)
        /// Not a result message this version understands: counted, not indexed.
        case undecodable
    }

    /// Counters and sizes, for metrics and tests.
    public struct Statistics: Sendable, Equatable {
        public var entries = 0
        public var bytes = 0
        public var pending = 0
        public var waiters = 0
        public var indexed = 0
        public var replaced = 0
        public var duplicates = 0
        public var expired = 0
        public var undecodable = 0
        public var evictedForEntries = 0
        public var evictedForBytes = 0
        public var evictedForAge = 0
        public var pendingEvicted = 0
    }

    /// Runs `work` after `milliseconds` without holding a thread meanwhile.
    public typealias Scheduler = @Sendable (_ milliseconds: Int, _ work: @escaping @Sendable () -> Void) -> Void

    public let limits: Limits
    private let now: @Sendable () -> Int64
    private let schedule: Scheduler
    private let state: Locked<State>

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
        let completion: @Sendable (WaitOutcome) -> Void
    }

    private struct State {
        var results: [String: Entry] = [:]
        /// Insertion order of `results`; entries whose sequence no longer matches `results` are stale and skipped.
        var resultOrder = FIFOQueue<(id: String, sequence: UInt64)>()
        var pending: [String: PendingMark] = [:]
        /// Marking order; entries whose sequence no longer matches `pending` are stale and skipped.
        var pendingOrder = FIFOQueue<(id: String, sequence: UInt64)>()
        var waiters: [String: [Waiter]] = [:]
        var waiterDeadlines = WaiterDeadlines()
        /// When the current wait timer fires (nil: none set), and its number: a timer superseded by an earlier one
        /// still fires, but only the current one sets the next.
        var timerDueMs: Int64?
        var timerGeneration: UInt64 = 0
        var nextSequence: UInt64 = 0
        /// Set by `stopWaiting()`: new waits end at once.
        var waitingStopped = false
        var statistics = Statistics()
    }

    /// - Parameters:
    ///   - now: wall-clock milliseconds (injectable for tests).
    ///   - schedule: the wait timer (default: a global Dispatch queue's `asyncAfter`).
    public init(
        limits: Limits = Limits(), now: @escaping @Sendable () -> Int64 = { SystemTime.wallMilliseconds() },
        schedule: @escaping Scheduler = { milliseconds, work in
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds), execute: work)
        }
    ) {
        self.limits = limits
        self.now = now
        self.schedule = schedule
        self.state = Locked(State())
    }

    // MARK: - Results

    /// Indexes one message of the results topic. `timestampMs` is the Kafka message time (the result's
    /// `verified_at_ms` when the message has none). Completes the waiters of its id that may see it.
    @discardableResult
    public func record(value: [UInt8], timestampMs: Int64?) -> RecordOutcome {
        let result: VerificationResult
        do {
            result = try MessageCoding.decode(VerificationResult.self, from: value)
        } catch {
            state.withLock { $0.statistics.undecodable += 1 }
            return .undecodable
        }
        let id = result.submissionId
        let time = timestampMs ?? result.verifiedAtMs
        let now = self.now()
        let (outcome, waiters): (RecordOutcome, [Waiter]) = state.withLock { state in
            evictExpired(&state, now: now)
            if time < now - limits.maxAgeMs {
                state.statistics.expired += 1
                return (.expired(submissionId: id), [])
            }
            var replacing = false
            if let existing = state.results[id] {
                let isLive = existing.timestampMs >= now - limits.maxAgeMs
                if isLive, existing.isFinal {
                    state.statistics.duplicates += 1
                    return (.duplicate(submissionId: id), [])
                }
                // Expired but not evicted yet (behind a newer entry), or a failed result: the new one replaces it.
                state.results[id] = nil
                state.statistics.bytes -= existing.value.count
                if isLive {
                    replacing = true
                    state.statistics.replaced += 1
                } else {
                    state.statistics.evictedForAge += 1
                }
            }
            let sequence = state.nextSequence
            state.nextSequence += 1
            state.results[id] = Entry(
                value: value, timestampMs: time, sequence: sequence, outcome: result.outcome,
                clientId: result.clientId, fingerprint: result.submissionFingerprint)
            state.resultOrder.append((id, sequence))
            state.statistics.bytes += value.count
            if !replacing { state.statistics.indexed += 1 }
            state.pending[id] = nil
            // Waiters that may not see this result keep waiting (their own submission's result may follow).
            var completed: [Waiter] = []
            if let waiting = state.waiters[id] {
                let (visible, hidden) = waiting.partitioned { $0.caller.maySee(clientId: result.clientId) }
                completed = visible
                state.waiters[id] = hidden.isEmpty ? nil : hidden
                state.statistics.waiters -= visible.count
            }
            evictOverLimits(&state)
            compactPendingOrder(&state)
            let outcome: RecordOutcome = replacing
                ? .replaced(submissionId: id, waitersCompleted: completed.count)
                : .indexed(submissionId: id, waitersCompleted: completed.count)
            return (outcome, completed)
        }
        for waiter in waiters {
            waiter.completion(.verdict(value))
        }
        return outcome
    }

    /// What `caller` may know about `id` now: a final result; a `failed` result unless a newer write of the id is
    /// pending; pending once Kafka acknowledged a write; otherwise unknown (also for another client's id).
    public func lookup(_ id: String, for caller: Caller = .unrestricted) -> Lookup {
        let now = self.now()
        return state.withLock { lookup(in: $0, id, caller: caller, now: now) }
    }

    private func lookup(in state: borrowing State, _ id: String, caller: Caller, now: Int64) -> Lookup {
        let oldestAllowed = now - limits.maxAgeMs
        let entry = state.results[id].flatMap { $0.timestampMs >= oldestAllowed ? $0 : nil }
        let mark = state.pending[id].flatMap { $0.sinceMs >= oldestAllowed && $0.acknowledged ? $0 : nil }
        if let entry, entry.isFinal || mark == nil {
            return caller.maySee(clientId: entry.clientId) ? .result(entry.value) : .unknown
        }
        if let mark {
            return caller.maySee(clientId: mark.clientId) ? .pending : .unknown
        }
        return .unknown
    }

    // MARK: - Writing submissions

    /// Decides about a posted submission with `fingerprint` from `caller`, and reserves the id when it is to be
    /// written. Precedence: another client's id (`foreign`), then a different fingerprint (`conflict`), then a final
    /// result (`answer`); otherwise (unknown, pending with the same fingerprint, or a `failed` result: not final)
    /// `write`. A result without a fingerprint counts as different, except a `failed` one (its proof was
    /// unreadable; a fresh attempt may follow).
    public func admit(_ id: String, fingerprint: String, caller: Caller) -> Admission {
        let now = self.now()
        return state.withLock { state in
            evictExpired(&state, now: now)
            let oldestAllowed = now - limits.maxAgeMs
            if let entry = state.results[id], entry.timestampMs >= oldestAllowed {
                guard caller.maySee(clientId: entry.clientId) else { return .foreign }
                if entry.isFinal {
                    return entry.fingerprint == fingerprint ? .answer(entry.value) : .conflict
                }
                if let previous = entry.fingerprint, previous != fingerprint { return .conflict }
            }
            if var mark = state.pending[id], mark.sinceMs >= oldestAllowed {
                guard caller.maySee(clientId: mark.clientId) else { return .foreign }
                guard mark.fingerprint == fingerprint else { return .conflict }
                mark.writing += 1
                state.pending[id] = mark
                return .write(
                    Reservation(
                        submissionId: id, fingerprint: fingerprint, clientId: caller.clientId,
                        sequence: mark.sequence))
            }
            let sequence = state.nextSequence
            state.nextSequence += 1
            state.pending[id] = PendingMark(
                sinceMs: now, sequence: sequence, fingerprint: fingerprint, clientId: caller.clientId,
                acknowledged: false, writing: 1)
            state.pendingOrder.append((id, sequence))
            evictOverLimits(&state)
            compactPendingOrder(&state)
            return .write(
                Reservation(
                    submissionId: id, fingerprint: fingerprint, clientId: caller.clientId, sequence: sequence))
        }
    }

    /// Kafka acknowledged the reserved write: the id is pending (until its result arrives), unless a result was
    /// recorded for it since the reservation was made.
    public func accepted(_ reservation: Reservation) {
        let now = self.now()
        let id = reservation.submissionId
        state.withLock { state in
            if var mark = state.pending[id] {
                mark.writing = max(0, mark.writing - 1)
                mark.acknowledged = true
                mark.sinceMs = now
                state.pending[id] = mark
                return
            }
            // The mark went (a result arrived, or it was evicted): mark again only if no result came since.
            if let entry = state.results[id], entry.sequence > reservation.sequence || entry.isFinal { return }
            let sequence = state.nextSequence
            state.nextSequence += 1
            state.pending[id] = PendingMark(
                sinceMs: now, sequence: sequence, fingerprint: reservation.fingerprint,
                clientId: reservation.clientId, acknowledged: true, writing: 0)
            state.pendingOrder.append((id, sequence))
            evictExpired(&state, now: now)
            evictOverLimits(&state)
            compactPendingOrder(&state)
        }
    }

    /// The reserved write did not happen (refused or failed): a mark that no write acknowledged and none is still
    /// writing goes away.
    public func abandoned(_ reservation: Reservation) {
        state.withLock { state in
            let id = reservation.submissionId
            guard var mark = state.pending[id], mark.sequence <= reservation.sequence else { return }
            mark.writing = max(0, mark.writing - 1)
            if mark.writing == 0, !mark.acknowledged {
                state.pending[id] = nil
            } else {
                state.pending[id] = mark
            }
        }
    }

    // MARK: - Waiting

    /// Completes `completion` with the result of `id` as soon as `caller` may see one (at once when `lookup` already
    /// answers one), or with `.timedOut` after `timeoutMs`. Exactly one completion, outside the index's lock.
    public func wait(
        for id: String, caller: Caller = .unrestricted, timeoutMs: Int,
        completion: @escaping @Sendable (WaitOutcome) -> Void
    ) {
        let now = self.now()
        let timeoutMs = max(0, timeoutMs)
        let registration: (registered: Bool, timer: (ms: Int, generation: UInt64)?) = state.withLock { state in
            if case .result = lookup(in: state, id, caller: caller, now: now) { return (false, nil) }
            if state.waitingStopped { return (false, nil) }
            let token = state.nextSequence
            state.nextSequence += 1
            state.waiters[id, default: []].append(Waiter(token: token, caller: caller, completion: completion))
            state.statistics.waiters += 1
            let dueMs = now + Int64(timeoutMs)
            state.waiterDeadlines.insert(.init(dueMs: dueMs, id: id, token: token))
            // One timer, for the earliest deadline: set a new one only when this waiter is due before it.
            if let timerDueMs = state.timerDueMs, timerDueMs <= dueMs { return (true, nil) }
            state.timerDueMs = dueMs
            state.timerGeneration += 1
            return (true, (timeoutMs, state.timerGeneration))
        }
        guard registration.registered else {
            if case .result(let value) = lookup(id, for: caller) {
                completion(.verdict(value))
            } else {
                // Waiting stopped (draining), or the result expired between the two looks.
                completion(.timedOut)
            }
            return
        }
        if let timer = registration.timer { setTimer(timer) }
    }

    /// Ends every waiting request with `.timedOut`, and every later `wait` at once (draining: answer them now rather
    /// than at their deadline). Idempotent.
    public func stopWaiting() {
        let waiters = state.withLock { state in
            defer {
                state.waitingStopped = true
                state.waiters = [:]
                state.waiterDeadlines.removeAll()
                state.statistics.waiters = 0
            }
            return state.waiters.values.flatMap { $0 }
        }
        for waiter in waiters {
            waiter.completion(.timedOut)
        }
    }

    private func setTimer(_ timer: (ms: Int, generation: UInt64)) {
        schedule(timer.ms) { [self] in expireDueWaiters(generation: timer.generation) }
    }

    /// The wait timer: ends the waiters whose time has come; the current timer then sets the next one, for the
    /// earliest deadline left.
    private func expireDueWaiters(generation: UInt64) {
        let now = self.now()
        let (expired, nextTimer): ([Waiter], (ms: Int, generation: UInt64)?) = state.withLock { state in
            var expired: [Waiter] = []
            for deadline in state.waiterDeadlines.popDue(nowMs: now) {
                guard var list = state.waiters[deadline.id],
                    let position = list.firstIndex(where: { $0.token == deadline.token })
                else { continue }  // answered by its verdict, or by stopWaiting
                expired.append(list.remove(at: position))
                state.waiters[deadline.id] = list.isEmpty ? nil : list
                state.statistics.waiters -= 1
            }
            guard generation == state.timerGeneration else { return (expired, nil) }  // superseded
            state.timerDueMs = nil
            guard let earliest = state.waiterDeadlines.earliestMs else { return (expired, nil) }
            state.timerDueMs = earliest
            state.timerGeneration += 1
            // At least 1 ms: a timer that fired a little before the index's clock reached the deadline tries again.
            return (expired, (Int(max(1, earliest - now)), state.timerGeneration))
        }
        if let nextTimer { setTimer(nextTimer) }
        for waiter in expired {
            waiter.completion(.timedOut)
        }
    }

    // MARK: - Bounds

    /// Current sizes and counters.
    public var statistics: Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.entries = state.results.count
            statistics.pending = state.pending.count
            return statistics
        }
    }

    /// Removes results and pending marks older than the age limit from the front (oldest inserted first). An older
    /// entry behind a newer one stays until it reaches the front; `lookup` already treats it as gone.
    private func evictExpired(_ state: inout State, now: Int64) {
        let oldestAllowed = now - limits.maxAgeMs
        while let (id, sequence) = state.resultOrder.first {
            if let entry = state.results[id], entry.sequence == sequence {
                guard entry.timestampMs < oldestAllowed else { break }
                state.results[id] = nil
                state.statistics.bytes -= entry.value.count
                state.statistics.evictedForAge += 1
            }
            state.resultOrder.removeFirst()
        }
        while let (id, sequence) = state.pendingOrder.first {
            if let mark = state.pending[id], mark.sequence == sequence {
                guard mark.sinceMs < oldestAllowed else { break }
                state.pending[id] = nil
                state.statistics.pendingEvicted += 1
            }
            state.pendingOrder.removeFirst()
        }
    }

    private func evictOverLimits(_ state: inout State) {
        while state.results.count > limits.maxEntries {
            removeFirstResult(&state)
            state.statistics.evictedForEntries += 1
        }
        while state.statistics.bytes > limits.maxBytes, !state.resultOrder.isEmpty {
            removeFirstResult(&state)
            state.statistics.evictedForBytes += 1
        }
        while state.pending.count > limits.maxPending, let (id, sequence) = state.pendingOrder.removeFirst() {
            if let mark = state.pending[id], mark.sequence == sequence {
                state.pending[id] = nil
                state.statistics.pendingEvicted += 1
            }
        }
    }

    /// Removes the oldest inserted result (a stale place in the order removes nothing).
    private func removeFirstResult(_ state: inout State) {
        guard let (id, sequence) = state.resultOrder.removeFirst(), let entry = state.results[id],
            entry.sequence == sequence
        else { return }
        state.results[id] = nil
        state.statistics.bytes -= entry.value.count
    }

    /// Pending marks removed by results or abandoned writes leave stale entries in `pendingOrder`; drop them once
    /// they dominate.
    private func compactPendingOrder(_ state: inout State) {
        guard state.pendingOrder.count > 2 * state.pending.count + 1024 else { return }
        let pending = state.pending
        _ = state.pendingOrder.removeAll { pending[$0.id]?.sequence != $0.sequence }
    }
}

extension Array {
    /// The elements for which `belongs` is true, and the others, each in their order.
    fileprivate func partitioned(by belongs: (Element) -> Bool) -> (matching: [Element], others: [Element]) {
        var matching: [Element] = []
        var others: [Element] = []
        for element in self {
            if belongs(element) { matching.append(element) } else { others.append(element) }
        }
        return (matching, others)
    }
}
