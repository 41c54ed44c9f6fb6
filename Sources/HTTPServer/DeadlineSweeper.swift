import Dispatch
import ServiceSupport
import Synchronization

/// Answers 503 for requests whose handler has not responded within the deadline.
///
/// libmicrohttpd never times out a suspended connection, so the server enforces the deadline itself. Every request
/// gets the same deadline, so registration order is deadline order and a FIFO with a periodic sweep suffices:
/// registering costs one append, and finished requests simply leave a dead weak reference behind.
final class DeadlineSweeper: @unchecked Sendable {
    private struct Entry {
        let deadline: UInt64
        weak var context: RequestContext?
    }

    private struct Queue {
        var entries: [Entry] = []
        var head = 0
    }

    private let deadlineNanoseconds: UInt64
    private let queue = Locked(Queue())
    private let onExpired: @Sendable (RequestContext) -> Void
    // Created in init, cancelled once in `cancel()`; DispatchSource is thread-safe.
    private let timer: any DispatchSourceTimer

    init(deadline: Duration, onExpired: @escaping @Sendable (RequestContext) -> Void) {
        let nanoseconds = UInt64(max(deadline.nanosecondsClamped, 1_000_000))
        self.deadlineNanoseconds = nanoseconds
        self.onExpired = onExpired
        // Sweep often enough that a deadline is overshot by at most ~5% (never more than 100 ms, never below 5 ms).
        let tick = min(max(nanoseconds / 20, 5_000_000), 100_000_000)
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "http-server-deadlines"))
        timer.schedule(
            deadline: .now() + .nanoseconds(Int(tick)), repeating: .nanoseconds(Int(tick)),
            leeway: .nanoseconds(Int(tick / 4)))
        timer.setEventHandler { [weak self] in self?.sweep(now: Clock.monotonicNanoseconds()) }
        timer.resume()
    }

    /// Starts the deadline of `context` now.
    func register(_ context: RequestContext) {
        let deadline = Clock.monotonicNanoseconds() &+ deadlineNanoseconds
        queue.withLock { $0.entries.append(Entry(deadline: deadline, context: context)) }
    }

    /// Every registered request not yet swept and not yet released, answered or not, regardless of deadline (used
    /// when stopping: the waiting ones are answered, then all are detached from their connections).
    func drainAll() -> [RequestContext] {
        let entries = queue.withLock { queue -> ArraySlice<Entry> in
            let pending = queue.entries[queue.head...]
            queue = Queue()
            return pending
        }
        return entries.compactMap { $0.context }
    }

    func cancel() {
        timer.cancel()
    }

    private func sweep(now: UInt64) {
        let expired = queue.withLock { queue -> [RequestContext] in
            var expired: [RequestContext] = []
            while queue.head < queue.entries.count, queue.entries[queue.head].deadline <= now {
                if let context = queue.entries[queue.head].context { expired.append(context) }
                queue.head += 1
            }
            if queue.head > 1024, queue.head * 2 > queue.entries.count {
                queue.entries.removeFirst(queue.head)
                queue.head = 0
            }
            return expired
        }
        // `respond` (in `onExpired`) checks and resumes under the context's lock, so a request answered or
        // completed meanwhile is left alone.
        for context in expired where context.isAwaitingResponse {
            onExpired(context)
        }
    }
}

extension Duration {
    /// Whole nanoseconds, clamped to `Int64.max`.
    var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow || seconds < 0 { return seconds < 0 ? 0 : Int64.max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
