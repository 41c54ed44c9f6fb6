import ReceiptModel

/// When a call to the App Store Server API may start: a token bucket per endpoint and environment (so a healthy
/// deployment stays under Apple's limits and never sees a 429) and, after a 429, a hold on that endpoint and
/// environment until Apple's `Retry-After` (calls during the hold are refused at once, without a request).
///
/// A pure state machine in the `DispatchState` style: time comes in as arguments, each call returns what to do, and
/// the owner (`ServerAPIPacer`) applies it outside its lock (timers, refusals). Invariants:
/// - a refused admission (held back, or too late for the caller's deadline) reserves no token;
/// - a hold only ever moves later (a second 429 with an earlier `Retry-After` does not shorten it);
/// - the sandbox bucket runs at `sandboxRatePerSecond` (a tenth of production by default, as Apple's limits are).
public struct ServerAPIPacing: Sendable {
    /// An endpoint in one environment: what Apple limits separately.
    public struct Key: Hashable, Sendable, CustomStringConvertible {
        public var endpoint: ServerAPIEndpoint
        public var environment: AppStoreEnvironment

        public init(_ endpoint: ServerAPIEndpoint, _ environment: AppStoreEnvironment) {
            self.endpoint = endpoint
            self.environment = environment
        }

        public var description: String { "\(endpoint.rawValue)/\(environment.rawValue)" }
    }

    /// What to do with a call.
    public enum Admission: Sendable, Equatable {
        /// Start it now.
        case start
        /// Start it after this many nanoseconds (a token is reserved for it).
        case startAfter(nanoseconds: UInt64)
        /// The endpoint is held back after a 429 for this many more nanoseconds: answer retryable now.
        case heldBack(remainingNanoseconds: UInt64)
        /// Its token would come after the caller's deadline: answer retryable now.
        case tooLate(waitNanoseconds: UInt64)
    }

    public let productionRatePerSecond: Double
    public let sandboxRatePerSecond: Double
    private var buckets: [Key: TokenBucket] = [:]
    private var holds: [Key: UInt64] = [:]

    /// - Parameters:
    ///   - productionRatePerSecond: calls per second per endpoint in production (`APPLE_SERVER_API_MAX_RPS`).
    ///   - sandboxRatePerSecond: per endpoint in the sandbox; default a tenth of production.
    public init(productionRatePerSecond: Double, sandboxRatePerSecond: Double? = nil) {
        precondition(productionRatePerSecond > 0, "the Server API rate must be positive")
        self.productionRatePerSecond = productionRatePerSecond
        self.sandboxRatePerSecond = sandboxRatePerSecond ?? productionRatePerSecond / 10
    }

    public func ratePerSecond(for environment: AppStoreEnvironment) -> Double {
        environment == .production ? productionRatePerSecond : sandboxRatePerSecond
    }

    /// The pace of one endpoint: the configured rate, never above Apple's published limit for it (a tenth of it
    /// in the sandbox).
    public func ratePerSecond(for key: Key) -> Double {
        let published = key.endpoint.publishedProductionLimitPerSecond
        let limit = key.environment == .production ? published : published / 10
        return min(ratePerSecond(for: key.environment), limit)
    }

    /// Admits a call to `key` at `nowNs` that is useless after `deadlineNs`.
    public mutating func admit(_ key: Key, nowNs: UInt64, deadlineNs: UInt64?) -> Admission {
        if let remaining = holdRemaining(key, nowNs: nowNs) {
            return .heldBack(remainingNanoseconds: remaining)
        }
        var bucket =
            buckets[key] ?? TokenBucket(ratePerSecond: ratePerSecond(for: key), nowNs: nowNs)
        defer { buckets[key] = bucket }
        guard let wait = bucket.reserve(nowNs: nowNs, latestStartNs: deadlineNs) else {
            return .tooLate(waitNanoseconds: bucket.waitNs(nowNs: nowNs))
        }
        return wait == 0 ? .start : .startAfter(nanoseconds: wait)
    }

    /// Apple answered 429 for `key`: hold it until `untilNs`. Returns true when this started or extended the hold
    /// (worth a log line), false when an equal or later hold was already in place.
    public mutating func holdBack(_ key: Key, untilNs: UInt64) -> Bool {
        if let current = holds[key], current >= untilNs { return false }
        holds[key] = untilNs
        return true
    }

    /// Nanoseconds left of `key`'s hold, or nil when it is not held.
    public mutating func holdRemaining(_ key: Key, nowNs: UInt64) -> UInt64? {
        guard let until = holds[key] else { return nil }
        guard until > nowNs else {
            holds.removeValue(forKey: key)
            return nil
        }
        return until - nowNs
    }

    /// Keys currently held back at `nowNs` with the nanoseconds left (for the hold gauge).
    public func holds(nowNs: UInt64) -> [Key: UInt64] {
        holds.filter { $0.value > nowNs }.mapValues { $0 - nowNs }
    }
}
