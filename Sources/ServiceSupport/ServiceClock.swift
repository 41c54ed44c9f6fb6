/// Time and timers for code that tests drive by hand: `DispatchClock` in the services, `ManualClock` (TestSupport,
/// not shipped) in unit tests.
///
/// Monotonic nanoseconds are on `SystemTime.monotonicNanoseconds()`'s timeline (Dispatch's uptime), so a deadline
/// given as a `DispatchTime` compares with `monotonicNanoseconds()` directly.
public protocol ServiceClock: Sendable {
    /// Milliseconds since the Unix epoch (what messages carry: `not_before_ms`, `verified_at_ms`).
    func wallMilliseconds() -> Int64
    /// Monotonic nanoseconds (deadlines, durations, probe times).
    func monotonicNanoseconds() -> UInt64
    /// Runs `work` once, on any thread, after `delay` (a timer, never a sleeping thread). A negative delay is zero.
    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void)
}
