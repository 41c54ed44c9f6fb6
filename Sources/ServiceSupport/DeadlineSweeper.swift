import Dispatch

/// A `DeadlineQueue` under a lock, swept by a periodic Dispatch timer: registering costs one append, and expired
/// elements are handed to `onExpired` on the sweep's queue, outside the lock. For deadlines that are all alike (the
/// HTTP server's response deadline, the ingest's wait for a Kafka delivery report), where a timer per element would
/// cost more than the work it guards.
///
/// An element's deadline is overshot by at most the tick (plus the timer's leeway, a quarter tick). Elements whose
/// work finished meanwhile are still handed over when their deadline passes: `onExpired` decides whether anything is
/// left to do (an answer already given, a weak reference gone).
public final class DeadlineSweeper<Element: Sendable>: Sendable {
    @usableFromInline let queue: Locked<DeadlineQueue<Element>>
    private let onExpired: @Sendable ([Element]) -> Void
    private let timer: SendableDispatchTimer

    /// Starts sweeping at once.
    /// - Parameters:
    ///   - timeout: how long after `register` an element expires.
    ///   - tick: how often to sweep (at least 1 ms).
    ///   - label: the sweep queue's label (shows in thread names and profiles).
    ///   - onExpired: receives the expired elements of one sweep, oldest first, never empty; runs on the sweep queue.
    public init(
        timeout: Duration, tick: Duration, label: String, onExpired: @escaping @Sendable ([Element]) -> Void
    ) {
        queue = Locked(DeadlineQueue(timeout: timeout))
        self.onExpired = onExpired
        timer = .repeating(every: tick, on: DispatchQueue(label: label))
        timer.start { [weak self] in self?.sweep(nowNanoseconds: SystemTime.monotonicNanoseconds()) }
    }

    deinit {
        timer.source.cancel()
    }

    /// Starts the timeout of `element` now. Inlinable, so it is specialized for the element type where it is called
    /// (once per request in the HTTP server and the ingest; unspecialized, each call looked up the generic metadata of
    /// the queue's types).
    @inlinable
    public func register(_ element: Element) {
        let now = SystemTime.monotonicNanoseconds()
        queue.withLock { $0.register(element, nowNanoseconds: now) }
    }

    /// Removes every element not yet expired, regardless of its deadline (when stopping), oldest first.
    public func removeAll() -> [Element] {
        queue.withLock { $0.removeAll() }
    }

    /// Stops sweeping; elements still registered are never handed to `onExpired`. Idempotent.
    public func cancel() {
        timer.source.cancel()
    }

    /// Hands what expired by `nowNanoseconds` to `onExpired` (the timer's work; tests may call it directly).
    func sweep(nowNanoseconds: UInt64) {
        let expired = queue.withLock { $0.expire(nowNanoseconds: nowNanoseconds) }
        if !expired.isEmpty { onExpired(expired) }
    }
}
