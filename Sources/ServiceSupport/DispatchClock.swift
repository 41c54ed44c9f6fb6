import Dispatch

/// The process clock (`SystemTime`) with Dispatch timers on one queue.
public struct DispatchClock: ServiceClock {
    private let queue: DispatchQueue

    /// - Parameter queue: where scheduled work runs; the default is the global concurrent queue.
    public init(queue: DispatchQueue = .global()) {
        self.queue = queue
    }

    public func wallMilliseconds() -> Int64 { SystemTime.wallMilliseconds() }

    public func monotonicNanoseconds() -> UInt64 { SystemTime.monotonicNanoseconds() }

    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
        let nanoseconds = Int(clamping: delay.clampedNanoseconds)
        queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds), execute: work)
    }
}
