import Foundation

/// Exponential backoff between attempts of something that must eventually succeed (reconnecting, re-reading,
/// publishing, asking Apple again): `initial` after the first failure, then each wait `multiplier` times the previous,
/// never above `maximum`. No jitter and no clock: `wait(afterFailures:)` is a pure function of the count, and the
/// caller sleeps or schedules, so tests read the sequence without waiting. A caller that wants jitter draws it itself
/// below this ceiling (see `AppleCallRetryPolicy`).
///
/// Two ways to use it: stateless, `wait(afterFailures: n)` where the caller counts (retry records, held messages);
/// or stateful, `next()` after each failure and `reset()` after a success (service loops).
public struct Backoff: Sendable, Equatable {
    public let initial: Duration
    public let maximum: Duration
    public let multiplier: Int
    /// Failures `next()` has answered since the last `reset()`.
    public private(set) var failures = 0

    public init(initial: Duration = .milliseconds(100), maximum: Duration = .seconds(5), multiplier: Int = 2) {
        self.initial = initial
        self.maximum = max(initial, maximum)
        self.multiplier = max(multiplier, 1)
    }

    /// The wait after `failures` failures in a row: `initial` after the first (and for 0 or fewer), then
    /// `initial * multiplier^(failures - 1)`, at most `maximum`. Stops multiplying once at the cap (any count is
    /// cheap and cannot overflow).
    public func wait(afterFailures failures: Int) -> Duration {
        var wait = initial
        var counted = 1
        while counted < failures && wait < maximum && wait > .zero && multiplier > 1 {
            wait *= multiplier
            counted += 1
        }
        return min(wait, maximum)
    }

    /// The wait `next()` returns next.
    public var current: Duration { wait(afterFailures: failures + 1) }

    /// After a failure: the wait before the next attempt; the one after it is longer, up to `maximum`.
    public mutating func next() -> Duration {
        failures += 1
        return wait(afterFailures: failures)
    }

    /// After a success: the next failure waits `initial` again.
    public mutating func reset() {
        failures = 0
    }

    /// Sleeps the calling thread for `next()` (for the services' own threads, never the cooperative pool).
    public mutating func sleep() {
        Thread.sleep(forTimeInterval: next() / .seconds(1))
    }
}
