import AppStoreServerAPI
import ReceiptModel
import ServiceSupport

/// Get Transaction Info's recent definitive "no" about a `transaction_id` submission, per environment, bundle id and
/// transaction id: while an answer is remembered, the same lookup is answered from here without a call, so the same
/// junk id submitted again and again (or retried round after round) costs Apple's quota once per `ttl`.
///
/// Only Apple's own permanent answers are kept: `4040010` TransactionIdNotFound / `4040005`
/// OriginalTransactionIdNotFound (Apple: "if sandbox also 4040010 the id exists nowhere", reference §2.4) and
/// `4000006` InvalidTransactionId, each for the one environment and app (token) that gave it. Never a 401, a 429,
/// a 5xx, a `…Retryable` code, a timeout or a success. A remembered answer is therefore one Apple gave about exactly
/// that lookup at most `ttl` ago; a real purchase is never made `rejected` by it unless Apple itself said "not
/// found" for it within the `ttl`, which is why the `ttl` is minutes, not hours.
///
/// Bounded: at most `maxEntries` answers, the oldest forgotten first (every entry has the same `ttl`, so the oldest
/// is also the first to expire). `maxEntries` 0 remembers nothing.
public final class TransactionNotFoundMemory: Sendable {
    public struct Limits: Sendable, Equatable {
        public var maxEntries: Int
        public var ttl: Duration

        public init(maxEntries: Int = Limits.defaultMaxEntries, ttl: Duration = Limits.defaultTTL) {
            self.maxEntries = max(0, maxEntries)
            self.ttl = ttl
        }

        public static let defaultMaxEntries = 100_000
        public static let defaultTTL = Duration.seconds(600)
        /// Remembers nothing: every lookup asks Apple.
        @_spi(Testing) public static let disabled = Limits(maxEntries: 0, ttl: .zero)
    }

    /// One lookup: Get Transaction Info about `transactionId` with `bundleId`'s token in `environment`.
    public struct Key: Sendable, Hashable {
        public var environment: AppStoreEnvironment
        public var bundleId: String
        public var transactionId: String

        public init(environment: AppStoreEnvironment, bundleId: String, transactionId: String) {
            self.environment = environment
            self.bundleId = bundleId
            self.transactionId = transactionId
        }
    }

    private struct Entry: Sendable {
        let error: ServerAPIError
        let expiresAtNs: UInt64
    }

    private struct State: Sendable {
        var entries: [Key: Entry] = [:]
        /// Keys in the order they were remembered, with the expiry they were remembered with (a key remembered
        /// again has a later one: only the entry matching its queue item is removed with it).
        var order = FIFOQueue<(key: Key, expiresAtNs: UInt64)>()
        var recalled = 0
        var remembered = 0
    }

    public let limits: Limits
    private let clock: any ServiceClock
    private let ttlNs: UInt64
    private let state = Locked(State())

    public init(limits: Limits = Limits(), clock: any ServiceClock = DispatchClock()) {
        self.limits = limits
        self.clock = clock
        ttlNs = limits.ttl.clampedNanoseconds
    }

    private var isEnabled: Bool { limits.maxEntries > 0 && ttlNs > 0 }

    /// Whether an answer of this kind is Apple's permanent word about the lookup (and may be remembered).
    public static func isDefinitive(_ error: ServerAPIError) -> Bool {
        error.kind == .notFound || error.kind == .invalidTransactionId
    }

    /// The answer Apple gave about `key` within the last `ttl`, or nil (ask Apple).
    public func recall(_ key: Key) -> ServerAPIError? {
        guard isEnabled else { return nil }
        let now = clock.monotonicNanoseconds()
        return state.withLock { state in
            guard let entry = state.entries[key] else { return nil }
            guard entry.expiresAtNs > now else {
                state.entries[key] = nil
                return nil
            }
            state.recalled += 1
            return entry.error
        }
    }

    /// Keeps Apple's `error` about `key` for `ttl` when it is a definitive one (else does nothing).
    public func remember(_ key: Key, _ error: ServerAPIError) {
        guard isEnabled, Self.isDefinitive(error) else { return }
        let now = clock.monotonicNanoseconds()
        let (sum, overflow) = now.addingReportingOverflow(ttlNs)
        let expiresAtNs = overflow ? .max : sum
        state.withLock { state in
            // Expired entries leave first (the queue is in expiry order), then the oldest beyond the bound.
            while let oldest = state.order.first, oldest.expiresAtNs <= now || state.order.count >= limits.maxEntries {
                state.order.removeFirst()
                if state.entries[oldest.key]?.expiresAtNs == oldest.expiresAtNs { state.entries[oldest.key] = nil }
            }
            state.entries[key] = Entry(error: error, expiresAtNs: expiresAtNs)
            state.order.append((key: key, expiresAtNs: expiresAtNs))
            state.remembered += 1
        }
    }

    /// Answers held now (expired ones not yet dropped included).
    public var count: Int { state.withLock { $0.entries.count } }

    /// Lookups answered from memory, and answers remembered, since start.
    public var statistics: (recalled: Int, remembered: Int) {
        state.withLock { ($0.recalled, $0.remembered) }
    }

    /// Exposes the memory's size and use, read when scraped.
    public func observe(_ registry: MetricsRegistry) {
        registry.collect(
            "appstore_server_api_not_found_memory_entries",
            help: "Get Transaction Info 'not found' answers remembered (per environment, bundle id and transaction id)",
            kind: .gauge
        ) { [weak self] in [([], Double(self?.count ?? 0))] }
        registry.collect(
            "appstore_server_api_not_found_memory_total",
            help: "transaction_id lookups answered from a remembered Apple 'not found' without a call (recalled), "
                + "and such answers remembered (remembered)",
            kind: .counter
        ) { [weak self] in
            let statistics = self?.statistics ?? (recalled: 0, remembered: 0)
            return [
                ([("result", "recalled")], Double(statistics.recalled)),
                ([("result", "remembered")], Double(statistics.remembered)),
            ]
        }
    }
}
