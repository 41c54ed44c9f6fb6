import Foundation

/// Time sources. Wall-clock milliseconds go into messages; monotonic nanoseconds measure durations and deadlines.
public enum Clock {
    /// Milliseconds since the Unix epoch (wall clock).
    public static func wallMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// Nanoseconds on a monotonic clock (not related to wall time; only differences are meaningful).
    public static func monotonicNanoseconds() -> UInt64 {
        DispatchTime.now().uptimeNanoseconds
    }

    /// Seconds elapsed since `start`, a value of `monotonicNanoseconds()`.
    public static func secondsSince(_ start: UInt64) -> Double {
        Double(monotonicNanoseconds() &- start) / 1e9
    }
}
