/// The back-pressure marks of the dispatch state. All counts are messages.
struct DispatchLimits: Sendable, Equatable {
    /// Apple verification rounds in flight per process (`VERIFIER_MAX_IN_FLIGHT`).
    var maxInFlight: Int
    /// A partition is paused when it holds this many messages (outstanding plus completed ones waiting behind an
    /// outstanding one): bounds memory and redelivery after a crash when one message is slow.
    var partitionWindow: Int
    /// ... and resumed when it holds at most this many.
    var partitionResumeMark: Int
    /// Every partition is paused when this many admitted messages wait for an Apple slot ...
    var pendingLimit: Int
    /// ... and resumed when at most this many wait.
    var pendingResumeMark: Int
    /// The partitions of the direct topics (notifications: processed without Apple) are paused when this many of
    /// their messages are admitted and not finished: no Apple slot bounds them, so this bounds their memory ...
    var directLimit: Int
    /// ... and resumed when at most this many are.
    var directResumeMark: Int

    /// - Parameters:
    ///   - directLimit: default `pendingLimit`; `directResumeMark` default: half of it.
    init(
        maxInFlight: Int, partitionWindow: Int, partitionResumeMark: Int, pendingLimit: Int, pendingResumeMark: Int,
        directLimit: Int? = nil, directResumeMark: Int? = nil
    ) {
        let directLimit = max(directLimit ?? pendingLimit, 2)
        let directResumeMark = directResumeMark ?? directLimit / 2
        precondition(maxInFlight > 0 && partitionWindow > 0 && pendingLimit > 0)
        precondition(partitionResumeMark < partitionWindow && pendingResumeMark < pendingLimit)
        precondition(directResumeMark < directLimit)
        self.maxInFlight = maxInFlight
        self.partitionWindow = partitionWindow
        self.partitionResumeMark = partitionResumeMark
        self.pendingLimit = pendingLimit
        self.pendingResumeMark = pendingResumeMark
        self.directLimit = directLimit
        self.directResumeMark = directResumeMark
    }

    /// Marks derived from the in-flight limit and a partition window: up to four times the in-flight limit may wait for
    /// Apple, so every slot stays busy while a paused consumer resumes and refetches (librdkafka drops its prefetch
    /// on pause), and as many direct messages may be in progress; resume marks at half.
    init(maxInFlight: Int, partitionWindow: Int) {
        let window = max(partitionWindow, 2)
        let pending = max(4 * maxInFlight, 2)
        let direct = max(16 * maxInFlight, 2)
        self.init(
            maxInFlight: maxInFlight, partitionWindow: window, partitionResumeMark: window / 2, pendingLimit: pending,
            pendingResumeMark: pending / 2, directLimit: direct, directResumeMark: direct / 2)
    }
}
