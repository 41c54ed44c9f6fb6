/// Whether a follower has read what its partitions held when it started: a pure state machine fed by the
/// follower's poll thread (no clock, no guessing from quiet periods).
///
/// Invariants:
/// - Only the partitions of the initial assignment count (later ones hold only messages written after the start).
///   Each gets a target, its high watermark when it was assigned; it is reached once the follower's position (the
///   next offset it will read) is at or past the target. A partition starting at or past its target is reached at
///   once.
/// - Caught up means: the topic did not exist at the start (nothing to read back), or an initial assignment happened
///   and every initial partition reached its target. Once caught up it stays so.
/// - A partition whose watermarks could not be had at assignment has an unknown target; it is not reached until a
///   target is learned (`learnedTarget`), so a lookup failure can delay readiness but never fake it.
struct FollowerCatchUp: Sendable, Equatable {
    private(set) var isCaughtUp = false
    /// Target high watermark per initial partition not reached yet (nil: unknown yet).
    private var pending: [Int32: Int64?] = [:]
    private var assigned = false

    /// The topic did not exist when the follower first looked. Returns whether this made it caught up.
    mutating func topicAbsentAtStart() -> Bool {
        guard !isCaughtUp, !assigned else { return false }
        isCaughtUp = true
        return true
    }

    /// The initial partitions: where each starts and its target (nil when unknown). Returns whether this made it
    /// caught up.
    mutating func initialAssignment(_ partitions: [(partition: Int32, start: Int64, target: Int64?)]) -> Bool {
        guard !assigned, !isCaughtUp else { return false }
        assigned = true
        for entry in partitions {
            if let target = entry.target, entry.start >= target { continue }
            pending[entry.partition] = .some(entry.target)
        }
        return finishIfDone()
    }

    /// The follower's position in `partition` (the next offset it will read). Returns whether this made it caught up.
    mutating func reached(partition: Int32, nextOffset: Int64) -> Bool {
        guard !isCaughtUp, let target = pending[partition], let target, nextOffset >= target else { return false }
        pending[partition] = nil
        return finishIfDone()
    }

    /// A target looked up later for a partition whose target was unknown.
    mutating func learnedTarget(partition: Int32, target: Int64) {
        guard let entry = pending[partition], entry == nil else { return }
        pending[partition] = .some(target)
    }

    /// Initial partitions not reached yet, with their targets (nil: unknown).
    var remaining: [Int32: Int64?] { pending }

    /// Whether a message at `offset` of `partition` was already written when the follower started (read-back).
    func isReadBack(partition: Int32, offset: Int64) -> Bool {
        guard let target = pending[partition] else { return false }
        guard let target else { return true }
        return offset < target
    }

    private mutating func finishIfDone() -> Bool {
        guard assigned, pending.isEmpty else { return false }
        isCaughtUp = true
        return true
    }
}
