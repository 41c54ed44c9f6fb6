import Crypto

/// The revocation checker's memory, per certificate (SHA-256 of its DER): the last verified OCSP answer, the fetch
/// in flight, the last failure. Pure bookkeeping (no I/O, no clock of its own); not thread-safe by itself:
/// `RevocationChecker` keeps it in a lock.
///
/// An answer is used until `expiresAt` = min(`nextUpdate`, fetched + max age); from half its life on
/// (`refreshAt`) a check that uses it also starts a background refresh, so the steady state never waits. Without a
/// usable answer a check waits for a fetch (joining the one in flight); within `retryInterval` of a failed fetch it
/// fails at once rather than asking again.
struct RevocationCache {
    struct Limits: Sendable, Equatable {
        /// Longest time an answer is used after it was fetched, whatever its `nextUpdate`.
        var maxAgeSeconds: Int64
        /// Least time between a failed fetch and the next one for the same certificate.
        var retryIntervalSeconds: Int64
        /// Certificates remembered at most (leaves rotate about every two years: a handful are live).
        var capacity: Int
    }

    struct Answer: Sendable, Equatable {
        let status: OCSPCertificateStatus
        let fetchedAt: Int64
        let expiresAt: Int64
        let refreshAt: Int64
    }

    struct Entry {
        var answer: Answer?
        var flight: RevocationFlight?
        var failedAt: Int64?
        var failure: String?
    }

    enum Decision {
        /// A usable answer; `refresh` is a new background flight the caller must start (nil: none needed).
        case answered(Answer, refresh: RevocationFlight?)
        /// No usable answer: wait for `flight`, which the caller must start when `start` is true.
        case wait(RevocationFlight, start: Bool)
        /// No usable answer and the last fetch failed less than `retryInterval` ago (its message).
        case recentFailure(String)
    }

    let limits: Limits
    private(set) var entries: [ByteKey: Entry] = [:]

    init(limits: Limits) {
        self.limits = limits
    }

    /// What a check of the certificate `key` at `now` (seconds since 1970) does.
    mutating func decide(_ key: ByteKey, now: Int64) -> Decision {
        var entry = entries[key] ?? Entry()
        defer { store(entry, for: key) }
        if let answer = entry.answer, now < answer.expiresAt {
            guard now >= answer.refreshAt, entry.flight == nil, !recentlyFailed(entry, now: now) else {
                return .answered(answer, refresh: nil)
            }
            let flight = RevocationFlight()
            entry.flight = flight
            return .answered(answer, refresh: flight)
        }
        if let flight = entry.flight { return .wait(flight, start: false) }
        if recentlyFailed(entry, now: now) { return .recentFailure(entry.failure ?? "the last OCSP fetch failed") }
        let flight = RevocationFlight()
        entry.flight = flight
        return .wait(flight, start: true)
    }

    /// Records the end of `flight` for `key` at `now`: a verified answer replaces the previous one, a failure keeps
    /// it (still usable until it expires).
    mutating func finish(
        _ key: ByteKey, flight: RevocationFlight, result: Result<OCSPStatusAnswer, RevocationFetchFailure>, now: Int64
    ) {
        var entry = entries[key] ?? Entry()
        if entry.flight === flight { entry.flight = nil }
        switch result {
        case .success(let answer):
            let expiresAt = min(answer.nextUpdate ?? .max, now + limits.maxAgeSeconds)
            entry.answer = Answer(
                status: answer.status, fetchedAt: now, expiresAt: expiresAt, refreshAt: now + (expiresAt - now) / 2)
            entry.failedAt = nil
            entry.failure = nil
        case .failure(let failure):
            entry.failedAt = now
            entry.failure = failure.message
        }
        store(entry, for: key)
    }

    /// The answer about `key`, if any (usable or not).
    func answer(_ key: ByteKey) -> Answer? { entries[key]?.answer }

    private func recentlyFailed(_ entry: Entry, now: Int64) -> Bool {
        guard let failedAt = entry.failedAt else { return false }
        return now - failedAt < limits.retryIntervalSeconds
    }

    private mutating func store(_ entry: Entry, for key: ByteKey) {
        if entries[key] == nil, entries.count >= max(1, limits.capacity) {
            // Forget the certificate whose answer is oldest (no fetch in flight): a rotated-out leaf.
            let idle = entries.filter { $0.value.flight == nil }
            let fetchedAt = { (entry: Entry) in entry.answer?.fetchedAt ?? .min }
            if let oldest = idle.min(by: { fetchedAt($0.value) < fetchedAt($1.value) }) {
                entries.removeValue(forKey: oldest.key)
            }
        }
        entries[key] = entry
    }
}
