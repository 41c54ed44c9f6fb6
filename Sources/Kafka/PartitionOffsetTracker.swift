/// Per-partition bookkeeping for out-of-order completion with safe offsets (pure value, no C, no locking).
///
/// Messages of one partition are handed out in fetch order (`track`) and may finish in any order (`complete`).
/// The offset that is safe to store is one past the end of the *contiguous completed prefix* of what was handed
/// out: everything before it is done, so a consumer that restarts there redoes only unfinished work.
///
/// Invariants:
/// - Offsets are tracked in strictly increasing order; gaps are normal (compaction, transaction markers) and never
///   assumed to be `previous + 1`. A tracked offset not greater than the last one tracked is refused.
/// - `complete` returns a value only when the prefix advanced, and that value is always larger than any it returned
///   before (`last popped offset + 1`, stored as is: librdkafka does not add 1).
/// - Completing an offset that was never tracked, or twice, changes nothing.
public struct PartitionOffsetTracker: Sendable {
    /// Offsets handed out and not yet popped, in fetch order, from `head`.
    private var offsets: [Int64] = []
    private var completed: [Bool] = []
    private var head = 0
    private var completedCount = 0
    /// The greatest offset ever tracked.
    public private(set) var lastTracked: Int64?
    /// The last value `complete` returned: the next offset to read.
    public private(set) var committableOffset: Int64?

    public init() {}

    /// Records that the message at `offset` was handed out for processing.
    /// - Returns: false (and records nothing) when `offset` is not greater than the last tracked offset.
    @discardableResult
    public mutating func track(_ offset: Int64) -> Bool {
        if let lastTracked, offset <= lastTracked { return false }
        offsets.append(offset)
        completed.append(false)
        lastTracked = offset
        return true
    }

    /// Marks `offset` as finished.
    /// - Returns: the new next offset to store when the contiguous completed prefix advanced, else nil.
    public mutating func complete(_ offset: Int64) -> Int64? {
        guard let index = index(of: offset), !completed[index] else { return nil }
        completed[index] = true
        completedCount += 1
        guard index == head else { return nil }
        var lastPopped = offset
        while head < offsets.count, completed[head] {
            lastPopped = offsets[head]
            head += 1
            completedCount -= 1
        }
        compactIfWorthIt()
        committableOffset = lastPopped + 1
        return lastPopped + 1
    }

    /// Messages handed out and not yet completed.
    @_spi(Testing) public var outstanding: Int { offsets.count - head - completedCount }

    /// Messages held: outstanding ones plus completed ones waiting behind an outstanding one.
    public var held: Int { offsets.count - head }

    /// The oldest offset handed out and not completed (the one holding the prefix back).
    @_spi(Testing) public var oldestOutstanding: Int64? {
        head < offsets.count ? offsets[head] : nil
    }

    /// Whether `offset` was tracked and is not yet completed.
    public func isOutstanding(_ offset: Int64) -> Bool {
        guard let index = index(of: offset) else { return false }
        return !completed[index]
    }

    /// Forgets everything outstanding (after a revoke: those messages will be delivered again).
    public mutating func reset() {
        self = PartitionOffsetTracker()
    }

    /// Binary search over the live part (offsets are strictly increasing).
    private func index(of offset: Int64) -> Int? {
        var low = head
        var high = offsets.count - 1
        while low <= high {
            let middle = (low + high) / 2
            let value = offsets[middle]
            if value == offset { return middle }
            if value < offset { low = middle + 1 } else { high = middle - 1 }
        }
        return nil
    }

    /// Drops popped entries once they are the larger part of the storage (amortized O(1) per offset).
    private mutating func compactIfWorthIt() {
        guard head >= 1024, head * 2 >= offsets.count else {
            if head == offsets.count {
                offsets.removeAll(keepingCapacity: true)
                completed.removeAll(keepingCapacity: true)
                head = 0
            }
            return
        }
        offsets.removeFirst(head)
        completed.removeFirst(head)
        head = 0
    }
}
