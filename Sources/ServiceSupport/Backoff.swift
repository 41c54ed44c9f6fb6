import Foundation

/// Exponential backoff between attempts of something that must eventually succeed (reconnecting, re-reading):
/// `initial`, then each wait `multiplier` times the previous, never above `maximum`; `reset()` after a success.
/// A value type with no clock: the caller sleeps, so tests read the sequence without waiting.
public struct Backoff: Sendable, Equatable {
    public let initial: Duration
    public let maximum: Duration
    public let multiplier: Int
    /// The wait `next()` returns next.
    public private(set) var current: Duration

    public init(initial: Duration = .milliseconds(100), maximum: Duration = .seconds(5), multiplier: Int = 2) {
        self.initial = initial
        self.maximum = max(initial, maximum)
        self.multiplier = max(multiplier, 1)
        self.current = initial
    }

    /// The wait before the next attempt; the one after it is longer, up to `maximum`.
    public mutating func next() -> Duration {
        let wait = current
        current = min(current * multiplier, maximum)
        return wait
    }

    /// After a success: the next failure waits `initial` again.
    public mutating func reset() {
        current = initial
    }

    /// Sleeps the calling thread for `next()` (for the services' own threads, never the cooperative pool).
    public mutating func sleep() {
        Thread.sleep(forTimeInterval: next() / .seconds(1))
    }
}
