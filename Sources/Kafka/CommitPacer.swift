/// When to commit stored offsets: promptly after they advance, but at most once per `minimumInterval` (pure value,
/// no C, no locking).
///
/// Every commit is an OffsetCommit request to the group coordinator, so committing on every stored offset would be
/// one request per message. The pacer turns a stream of `request`s into at most one commit per interval: the first
/// request after a quiet interval commits at once (leading edge), later ones are merged into one commit made when
/// the interval has passed (trailing edge, `takeDue`), so the last offset stored is never left waiting for the
/// periodic auto-commit.
///
/// Invariants: two commits the pacer asks for are at least `minimumInterval` apart; a request is never forgotten
/// (it is either committed at once or pending until `takeDue` returns true).
public struct CommitPacer: Sendable {
    /// The least time between two commits, in nanoseconds.
    public let minimumIntervalNs: UInt64
    /// When the pacer last asked for a commit (monotonic nanoseconds).
    public private(set) var lastCommitNs: UInt64?
    /// A request arrived that no commit covered yet.
    public private(set) var isPending = false

    public init(minimumInterval: Duration) {
        let components = minimumInterval.components
        let nanoseconds = max(components.seconds, 0) * 1_000_000_000 + max(components.attoseconds, 0) / 1_000_000_000
        self.minimumIntervalNs = UInt64(nanoseconds)
    }

    /// Offsets were stored at `nowNs`.
    /// - Returns: true when the caller should commit now; false when the commit is left to `takeDue`.
    public mutating func request(nowNs: UInt64) -> Bool {
        if let lastCommitNs, nowNs &- lastCommitNs < minimumIntervalNs {
            isPending = true
            return false
        }
        lastCommitNs = nowNs
        isPending = false
        return true
    }

    /// Asked regularly (the poll loop).
    /// - Returns: true when a pending request's interval has passed: the caller commits now.
    public mutating func takeDue(nowNs: UInt64) -> Bool {
        guard isPending else { return false }
        if let lastCommitNs, nowNs &- lastCommitNs < minimumIntervalNs { return false }
        lastCommitNs = nowNs
        isPending = false
        return true
    }

    /// How long until a pending request is due, in nanoseconds (0 when due now); nil when nothing is pending.
    public func nanosecondsUntilDue(nowNs: UInt64) -> UInt64? {
        guard isPending else { return nil }
        guard let lastCommitNs else { return 0 }
        let elapsed = nowNs &- lastCommitNs
        return elapsed >= minimumIntervalNs ? 0 : minimumIntervalNs - elapsed
    }
}
