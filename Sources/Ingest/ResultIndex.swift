import Dispatch
import ReceiptModel
import ServiceSupport
import Synchronization

/// The ingest's bounded in-memory view of `RESULTS_TOPIC`, by `submission_id`, plus the submissions this instance
/// accepted that have no result yet ("pending") and the requests waiting for a result (`POST ?wait_ms=`).
///
/// Invariants:
/// - Results are stored as the exact message bytes (answered verbatim by `GET /v1/receipts/{id}`), at most
///   `limits.maxEntries` of them and at most `limits.maxBytes` of message bytes, each for at most `limits.maxAgeMs`
///   after its timestamp (the Kafka message time). Over a limit, the oldest inserted go first. Lookups are O(1) and
///   never return an expired result.
/// - The first result for an id wins: a duplicate (at-least-once delivery) carries the same verdict and is ignored.
///   A result whose predecessor for the id has expired (but was not evicted yet) replaces it.
/// - Pending ids are bounded by `limits.maxPending` and `limits.maxAgeMs` the same way; a result removes its id.
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

    /// What `record` did with a message.
    public enum RecordOutcome: Sendable, Equatable {
        /// Indexed; `waitersCompleted` waiting requests got it.
        case indexed(submissionId: String, waitersCompleted: Int)
        /// A result for the id was already indexed: kept the first.
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
    private let state: Mutex<State>

    private struct Entry {
        let value: [UInt8]
        let timestampMs: Int64
        /// Matches this entry's place in `resultOrder` (an expired entry replaced by a new result leaves a stale one).
        let sequence: UInt64
    }

    private struct PendingMark {
        let sinceMs: Int64
        let sequence: UInt64
    }

    private struct Waiter {
        let token: UInt64
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
        limits: Limits = Limits(), now: @escaping @Sendable () -> Int64 = { Clock.wallMilliseconds() },
        schedule: @escaping Scheduler = { milliseconds, work in
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds), execute: work)
        }
    ) {
        self.limits = limits
        self.now = now
        self.schedule = schedule
        self.state = Mutex(State())
    }

    // MARK: - Results

    /// Indexes one message of the results topic. `timestampMs` is the Kafka message time (the result's
    /// `verified_at_ms` when the message has none). Completes the waiters of its id with the message.
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
            if let existing = state.results[id] {
                if existing.timestampMs >= now - limits.maxAgeMs {
                    state.statistics.duplicates += 1
                    return (.duplicate(submissionId: id), [])
                }
                // Expired but not evicted yet (behind a newer entry): the new result replaces it.
                state.results[id] = nil
                state.statistics.bytes -= existing.value.count
                state.statistics.evictedForAge += 1
            }
            let sequence = state.nextSequence
            state.nextSequence += 1
            state.results[id] = Entry(value: value, timestampMs: time, sequence: sequence)
            state.resultOrder.append((id, sequence))
            state.statistics.bytes += value.count
            state.statistics.indexed += 1
            state.pending[id] = nil
            let waiters = state.waiters.removeValue(forKey: id) ?? []
            state.statistics.waiters -= waiters.count
            evictOverLimits(&state)
            compactPendingOrder(&state)
            return (.indexed(submissionId: id, waitersCompleted: waiters.count), waiters)
        }
        for waiter in waiters {
            waiter.completion(.verdict(value))
        }
        return outcome
    }

    /// What is known about `id` now.
    public func lookup(_ id: String) -> Lookup {
        let now = self.now()
        return state.withLock { state in
            if let entry = state.results[id], entry.timestampMs >= now - limits.maxAgeMs {
                return .result(entry.value)
            }
            if let mark = state.pending[id], mark.sinceMs >= now - limits.maxAgeMs {
                return .pending
            }
            return .unknown
        }
    }

    // MARK: - Pending

    /// Remembers that this instance accepted `id` (Kafka acknowledged it) and has no result for it yet. Does nothing
    /// when its result is already indexed.
    public func markPending(_ id: String) {
        let now = self.now()
        state.withLock { state in
            guard state.results[id] == nil else { return }
            let sequence = state.nextSequence
            state.nextSequence += 1
            state.pending[id] = PendingMark(sinceMs: now, sequence: sequence)
            state.pendingOrder.append((id, sequence))
            evictExpired(&state, now: now)
            evictOverLimits(&state)
            compactPendingOrder(&state)
        }
    }

    // MARK: - Waiting

    /// Completes `completion` with the result of `id` as soon as it is indexed (at once when it already is), or with
    /// `.timedOut` after `timeoutMs`. Exactly one completion, outside the index's lock.
    public func wait(for id: String, timeoutMs: Int, completion: @escaping @Sendable (WaitOutcome) -> Void) {
        let now = self.now()
        let timeoutMs = max(0, timeoutMs)
        let registration: (registered: Bool, timer: (ms: Int, generation: UInt64)?) = state.withLock { state in
            if let entry = state.results[id], entry.timestampMs >= now - limits.maxAgeMs { return (false, nil) }
            if state.waitingStopped { return (false, nil) }
            let token = state.nextSequence
            state.nextSequence += 1
            state.waiters[id, default: []].append(Waiter(token: token, completion: completion))
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
            if case .result(let value) = lookup(id) {
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

    /// Pending marks removed by results leave stale entries in `pendingOrder`; drop them once they dominate.
    private func compactPendingOrder(_ state: inout State) {
        guard state.pendingOrder.count > 2 * state.pending.count + 1024 else { return }
        let pending = state.pending
        state.pendingOrder.filter { pending[$0.id]?.sequence == $0.sequence }
    }
}
