import Dispatch
import ServiceSupport

/// Time and timers for the engine (a manual implementation drives unit tests).
public protocol VerifierClock: Sendable {
    /// Milliseconds since the Unix epoch (`not_before_ms`, `verified_at_ms`).
    func wallMilliseconds() -> Int64
    /// Monotonic nanoseconds (breaker probes, durations).
    func monotonicNanoseconds() -> UInt64
    /// Runs `work` once, on any thread, after `delay`.
    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void)
}

/// The process clock with Dispatch timers.
public struct SystemVerifierClock: VerifierClock {
    private let queue: DispatchQueue

    public init(queue: DispatchQueue = DispatchQueue(label: "verifier-timers")) {
        self.queue = queue
    }

    public func wallMilliseconds() -> Int64 { Clock.wallMilliseconds() }
    public func monotonicNanoseconds() -> UInt64 { Clock.monotonicNanoseconds() }

    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
        let nanoseconds = Int(clamping: AppleCircuitBreaker.nanoseconds(delay))
        queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds), execute: work)
    }
}
