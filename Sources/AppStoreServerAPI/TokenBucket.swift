/// A token bucket on a monotonic clock: `ratePerSecond` tokens a second, at most `capacity` saved up. Pure (time
/// comes in as an argument), so tests are exact and need no threads.
///
/// A call reserves a token: when one is there it starts now; otherwise the bucket goes into debt and the call starts
/// when its token will have been earned (`reserve` returns the wait). A reservation that could not start before the
/// caller's latest start time is refused and leaves the bucket unchanged, so callers that give up cost nothing.
public struct TokenBucket: Sendable, Equatable {
    public let ratePerSecond: Double
    public let capacity: Double
    /// Tokens available at `updatedAtNs`; negative while calls wait for tokens already promised to them.
    public private(set) var tokens: Double
    private var updatedAtNs: UInt64

    /// A full bucket.
    ///
    /// - Parameters:
    ///   - ratePerSecond: tokens earned per second; positive.
    ///   - capacity: the burst; at least 1 (default: one second's worth).
    public init(ratePerSecond: Double, capacity: Double? = nil, nowNs: UInt64) {
        precondition(ratePerSecond > 0 && ratePerSecond.isFinite, "a token bucket needs a positive rate")
        self.ratePerSecond = ratePerSecond
        self.capacity = max(1, capacity ?? ratePerSecond)
        tokens = self.capacity
        updatedAtNs = nowNs
    }

    /// Reserves one token.
    ///
    /// - Parameters:
    ///   - nowNs: monotonic now.
    ///   - latestStartNs: the call is useless if it starts after this; nil = no limit.
    /// - Returns: nanoseconds to wait before starting (0 = now), or nil when the call could not start by
    ///   `latestStartNs` (nothing is reserved then).
    public mutating func reserve(nowNs: UInt64, latestStartNs: UInt64?) -> UInt64? {
        refill(nowNs: nowNs)
        let remaining = tokens - 1
        let waitNs: UInt64 = remaining >= 0 ? 0 : UInt64((-remaining / ratePerSecond * 1e9).rounded(.up))
        if let latestStartNs, nowNs &+ waitNs > latestStartNs { return nil }
        tokens = remaining
        return waitNs
    }

    /// The wait a reservation made now would have, without making it.
    public func waitNs(nowNs: UInt64) -> UInt64 {
        var copy = self
        copy.refill(nowNs: nowNs)
        let remaining = copy.tokens - 1
        return remaining >= 0 ? 0 : UInt64((-remaining / ratePerSecond * 1e9).rounded(.up))
    }

    private mutating func refill(nowNs: UInt64) {
        guard nowNs > updatedAtNs else { return }
        let earned = Double(nowNs - updatedAtNs) / 1e9 * ratePerSecond
        tokens = min(capacity, tokens + earned)
        updatedAtNs = nowNs
    }
}
