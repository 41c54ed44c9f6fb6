import Dispatch
import HTTPServer
import ServiceSupport
import Synchronization

/// A request (a submission or a notification) waiting for Kafka's delivery report, answered exactly once: by the
/// report, or by `KafkaAnswerDeadlines` when the report is late. Whoever `claim`s it first answers.
final class PendingKafkaAnswer: Sendable {
    /// What is being written.
    enum Kind: String, Sendable {
        case submission
        case notification
    }

    let kind: Kind
    /// The submission id, or the notification's UUID (for logs; may be empty).
    let id: String
    let respond: HTTPResponder
    private let claimed = Atomic<Bool>(false)

    init(kind: Kind = .submission, id: String, respond: @escaping HTTPResponder) {
        self.kind = kind
        self.id = id
        self.respond = respond
    }

    /// True for the first caller only.
    func claim() -> Bool {
        !claimed.exchange(true, ordering: .acquiringAndReleasing)
    }
}

/// Answers `kafka_timeout` (with the submission id) for requests Kafka has not reported on within
/// `timeoutMs`. The handler sets `timeoutMs` a little after librdkafka's `message.timeout.ms` (its own timeout
/// report comes first when it is on time) and before the HTTP server's deadline, whose generic 503 cannot name the
/// submission.
///
/// Every entry has the same timeout, so registration order is deadline order: a FIFO and one periodic sweep, no
/// timer per request. An entry answered by its report stays until its deadline passes, then is dropped.
final class KafkaAnswerDeadlines: @unchecked Sendable {
    private struct Entry {
        let dueNanoseconds: UInt64
        let pending: PendingKafkaAnswer
    }

    let timeoutMs: Int
    private let entries = Locked(FIFOQueue<Entry>())
    private let onExpired: @Sendable (PendingKafkaAnswer) -> Void
    // Created in init, cancelled in `cancel()`/deinit; DispatchSource is thread-safe (hence @unchecked Sendable).
    private let timer: any DispatchSourceTimer

    /// - Parameter onExpired: answers an expired submission (already claimed for it); runs on the sweep's queue.
    init(timeoutMs: Int, onExpired: @escaping @Sendable (PendingKafkaAnswer) -> Void) {
        self.timeoutMs = timeoutMs
        self.onExpired = onExpired
        // Overshoot at most ~5% of the timeout, between 10 and 100 ms.
        let tickMs = min(max(timeoutMs / 20, 10), 100)
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "ingest-kafka-answer-deadlines"))
        timer.schedule(
            deadline: .now() + .milliseconds(tickMs), repeating: .milliseconds(tickMs),
            leeway: .milliseconds(tickMs / 4))
        timer.setEventHandler { [weak self] in self?.sweep(now: Clock.monotonicNanoseconds()) }
        timer.resume()
    }

    deinit {
        timer.cancel()
    }

    /// Starts the deadline of `pending` now.
    func register(_ pending: PendingKafkaAnswer) {
        let due = Clock.monotonicNanoseconds() &+ UInt64(max(0, timeoutMs)) * 1_000_000
        entries.withLock { $0.append(Entry(dueNanoseconds: due, pending: pending)) }
    }

    /// Stops the sweep (after the HTTP server stopped: nothing waits any more).
    func cancel() {
        timer.cancel()
    }

    private func sweep(now: UInt64) {
        let expired = entries.withLock { entries -> [PendingKafkaAnswer] in
            var expired: [PendingKafkaAnswer] = []
            while let first = entries.first, first.dueNanoseconds <= now {
                entries.removeFirst()
                expired.append(first.pending)
            }
            return expired
        }
        for pending in expired where pending.claim() {
            onExpired(pending)
        }
    }
}
