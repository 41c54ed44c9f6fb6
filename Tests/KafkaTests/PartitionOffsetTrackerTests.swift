@_spi(Testing) import Kafka
import Testing

@Suite("PartitionOffsetTracker")
struct PartitionOffsetTrackerTests {
    @Test("in-order completion advances the stored offset one past each message")
    func inOrder() {
        var tracker = PartitionOffsetTracker()
        for offset: Int64 in 0..<3 { tracker.track(offset) }
        #expect(tracker.outstanding == 3)
        do { let result = tracker.complete(0); #expect(result == 1) }
        do { let result = tracker.complete(1); #expect(result == 2) }
        do { let result = tracker.complete(2); #expect(result == 3) }
        #expect(tracker.outstanding == 0)
        #expect(tracker.held == 0)
        #expect(tracker.committableOffset == 3)
    }

    @Test("out-of-order completion stores only the contiguous completed prefix")
    func outOfOrder() {
        var tracker = PartitionOffsetTracker()
        for offset: Int64 in 10..<15 { tracker.track(offset) }
        do { let result = tracker.complete(12); #expect(result == nil) }
        do { let result = tracker.complete(14); #expect(result == nil) }
        do { let result = tracker.complete(11); #expect(result == nil) }
        #expect(tracker.outstanding == 2)
        #expect(tracker.oldestOutstanding == 10)
        // 10 completes: 10, 11, 12 pop; 13 still outstanding.
        do { let result = tracker.complete(10); #expect(result == 13) }
        #expect(tracker.oldestOutstanding == 13)
        do { let result = tracker.complete(13); #expect(result == 15) }
        #expect(tracker.outstanding == 0)
    }

    @Test("gaps in offsets are never assumed to be previous + 1")
    func gaps() {
        var tracker = PartitionOffsetTracker()
        tracker.track(5)
        tracker.track(9)  // 6...8 were compacted away or were transaction markers
        tracker.track(20)
        do { let result = tracker.complete(9); #expect(result == nil) }
        do { let result = tracker.complete(5); #expect(result == 10) }
        do { let result = tracker.complete(20); #expect(result == 21) }
    }

    @Test("completing an untracked offset, or twice, changes nothing")
    func untrackedAndDuplicates() {
        var tracker = PartitionOffsetTracker()
        tracker.track(1)
        tracker.track(2)
        do { let result = tracker.complete(7); #expect(result == nil) }
        do { let result = tracker.complete(0); #expect(result == nil) }
        #expect(tracker.outstanding == 2)
        do { let result = tracker.complete(2); #expect(result == nil) }
        do { let result = tracker.complete(2); #expect(result == nil) }
        #expect(tracker.outstanding == 1)
        do { let result = tracker.complete(1); #expect(result == 3) }
        do { let result = tracker.complete(1); #expect(result == nil) }
        do { let result = tracker.complete(2); #expect(result == nil) }
    }

    @Test("tracking an offset not above the last tracked one is refused")
    func refusesOutOfOrderTracking() {
        var tracker = PartitionOffsetTracker()
        do { let result = tracker.track(4); #expect(result) }
        do { let result = tracker.track(4); #expect(!result) }
        do { let result = tracker.track(3); #expect(!result) }
        #expect(tracker.outstanding == 1)
        #expect(tracker.lastTracked == 4)
        // After a popped prefix the rule still holds: redelivered offsets do not re-enter.
        do { let result = tracker.complete(4); #expect(result == 5) }
        do { let result = tracker.track(4); #expect(!result) }
        do { let result = tracker.track(5); #expect(result) }
    }

    @Test("isOutstanding reflects tracked and not completed")
    func isOutstanding() {
        var tracker = PartitionOffsetTracker()
        tracker.track(1)
        tracker.track(2)
        _ = tracker.complete(2)
        #expect(tracker.isOutstanding(1))
        #expect(!tracker.isOutstanding(2))
        #expect(!tracker.isOutstanding(3))
    }

    @Test("reset forgets everything, including the last tracked offset")
    func reset() {
        var tracker = PartitionOffsetTracker()
        tracker.track(1)
        tracker.track(2)
        tracker.reset()
        #expect(tracker.outstanding == 0)
        #expect(tracker.lastTracked == nil)
        do { let result = tracker.track(0); #expect(result) }
        do { let result = tracker.complete(0); #expect(result == 1) }
    }

    @Test("a long run with a window of reversed completions matches a reference model")
    func matchesReferenceModel() {
        var tracker = PartitionOffsetTracker()
        var generator = SplitMix(seed: 42)
        var handedOut: [Int64] = []
        var offset: Int64 = 100
        for _ in 0..<5000 {
            offset += Int64(generator.next() % 3) + 1  // gaps of 0...2
            tracker.track(offset)
            handedOut.append(offset)
        }
        var pending = handedOut
        var completed = Set<Int64>()
        var lastStored: Int64?
        while !pending.isEmpty {
            // Complete a random one of the oldest 64: heavy reordering inside a window.
            let index = Int(generator.next() % UInt64(min(64, pending.count)))
            let done = pending.remove(at: index)
            completed.insert(done)
            let stored = tracker.complete(done)
            // Reference: one past the longest completed prefix of handedOut.
            let prefix = handedOut.prefix { completed.contains($0) }
            let expected = prefix.last.map { $0 + 1 }
            if expected != lastStored {
                #expect(stored == expected)
                lastStored = expected
            } else {
                #expect(stored == nil)
            }
            #expect(tracker.outstanding == pending.count)
        }
        #expect(lastStored == handedOut.last! + 1)
        #expect(tracker.held == 0)
    }
}

/// A small deterministic generator (SplitMix64), so randomized tests are reproducible: the same seed gives the same
/// sequence on every run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
