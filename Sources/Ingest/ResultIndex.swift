import ReceiptModel
import ServiceSupport

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
///
/// The bookkeeping is the pure `ResultIndexState`; this owner holds it behind a lock, reads the time from its
/// `ServiceClock`, decodes result messages, runs the completions the state returns and sets the timers it asks for.
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

    public typealias Completion = @Sendable (WaitOutcome) -> Void

    public let limits: Limits
    private let clock: any ServiceClock
    private let state: Locked<ResultIndexState<Completion>>

    /// - Parameters:
    ///   - clock: wall-clock milliseconds and the wait timer (tests pass a `ManualClock`).
    public init(limits: Limits = Limits(), clock: any ServiceClock = DispatchClock()) {
        self.limits = limits
        self.clock = clock
        self.state = Locked(ResultIndexState(limits: limits))
    }

    // MARK: - Results

    /// Indexes one message of the results topic. `timestampMs` is the Kafka message time (the result's
    /// `verified_at_ms` when the message has none). Completes the waiters of its id that may see it.
    @discardableResult
    public func record(value: [UInt8], timestampMs: Int64?) -> RecordOutcome {
        guard let result = IndexedResult(value) else {
            state.withLock { $0.countUndecodable() }
            return .undecodable
        }
        let message = ResultIndexState<Completion>.ResultMessage(
            value: value, submissionId: result.submissionId, outcome: result.outcome, clientId: result.clientId,
            fingerprint: result.fingerprint, timestampMs: timestampMs ?? result.verifiedAtMs)
        let now = clock.wallMilliseconds()
        let (outcome, completions) = state.withLock { $0.record(message, nowMs: now) }
        for completion in completions {
            completion(.verdict(value))
        }
        return outcome
    }

    /// What `caller` may know about `id` now: a final result; a `failed` result unless a newer write of the id is
    /// pending; pending once Kafka acknowledged a write; otherwise unknown (also for another client's id).
    public func lookup(_ id: String, for caller: Caller = .unrestricted) -> Lookup {
        let now = clock.wallMilliseconds()
        return state.withLock { $0.lookup(id, caller: caller, nowMs: now) }
    }

    // MARK: - Writing submissions

    /// Decides about a posted submission with `fingerprint` from `caller`, and reserves the id when it is to be
    /// written. Precedence: another client's id (`foreign`), then a different fingerprint (`conflict`), then a final
    /// result (`answer`); otherwise (unknown, pending with the same fingerprint, or a `failed` result: not final)
    /// `write`. A result without a fingerprint counts as different, except a `failed` one (its proof was
    /// unreadable; a fresh attempt may follow).
    public func admit(_ id: String, fingerprint: String, caller: Caller) -> Admission {
        let now = clock.wallMilliseconds()
        return state.withLock { $0.admit(id, fingerprint: fingerprint, caller: caller, nowMs: now) }
    }

    /// Kafka acknowledged the reserved write: the id is pending (until its result arrives), unless a result was
    /// recorded for it since the reservation was made.
    public func accepted(_ reservation: Reservation) {
        let now = clock.wallMilliseconds()
        state.withLock { $0.accepted(reservation, nowMs: now) }
    }

    /// The reserved write did not happen (refused or failed): a mark that no write acknowledged and none is still
    /// writing goes away.
    public func abandoned(_ reservation: Reservation) {
        state.withLock { $0.abandoned(reservation) }
    }

    // MARK: - Waiting

    /// Completes `completion` with the result of `id` as soon as `caller` may see one (at once when `lookup` already
    /// answers one), or with `.timedOut` after `timeoutMs`. Exactly one completion, outside the index's lock.
    public func wait(
        for id: String, caller: Caller = .unrestricted, timeoutMs: Int, completion: @escaping Completion
    ) {
        let now = clock.wallMilliseconds()
        let registration = state.withLock {
            $0.addWaiter(for: id, caller: caller, timeoutMs: timeoutMs, nowMs: now, completion: completion)
        }
        switch registration {
        case .answerNow(let value):
            completion(.verdict(value))
        case .stopped:
            completion(.timedOut)
        case .registered(let timer):
            if let timer { setTimer(timer) }
        }
    }

    /// Ends every waiting request with `.timedOut`, and every later `wait` at once (draining: answer them now rather
    /// than at their deadline). Idempotent.
    public func stopWaiting() {
        for completion in state.withLock({ $0.stopWaiting() }) {
            completion(.timedOut)
        }
    }

    private func setTimer(_ timer: ResultIndexState<Completion>.TimerRequest) {
        clock.schedule(after: .milliseconds(timer.delayMs)) { [self] in expireDueWaiters(generation: timer.generation) }
    }

    /// The wait timer: ends the waiters whose time has come and sets the next timer the state asks for.
    private func expireDueWaiters(generation: UInt64) {
        let now = clock.wallMilliseconds()
        let (expired, next) = state.withLock { $0.expireDueWaiters(nowMs: now, generation: generation) }
        if let next { setTimer(next) }
        for completion in expired {
            completion(.timedOut)
        }
    }

    /// Current sizes and counters.
    public var statistics: Statistics {
        state.withLock { $0.statistics }
    }
}
