import Foundation

/// The process's time sources, read directly. Wall-clock milliseconds go into messages; monotonic nanoseconds measure
/// durations and deadlines. Code that tests must control takes a `ServiceClock` instead.
///
/// Named so as not to shadow the standard library's `Clock` protocol (`ContinuousClock`, `SuspendingClock`).
public enum SystemTime {
    /// Milliseconds since the Unix epoch (wall clock).
    public static func wallMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// Nanoseconds on a monotonic clock (not related to wall time; only differences are meaningful). The same
    /// timeline as `DispatchTime.now().uptimeNanoseconds`, so Dispatch deadlines can be compared with it.
    public static func monotonicNanoseconds() -> UInt64 {
        DispatchTime.now().uptimeNanoseconds
    }

    /// Seconds elapsed since `start`, a value of `monotonicNanoseconds()`.
    public static func secondsSince(_ start: UInt64) -> Double {
        Double(monotonicNanoseconds() &- start) / 1e9
    }
}
