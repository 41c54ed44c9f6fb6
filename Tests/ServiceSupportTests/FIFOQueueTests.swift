import ServiceSupport
import Testing

@Suite struct FIFOQueueTests {
    @Test func elementsLeaveInTheOrderTheyCame() {
        var queue = FIFOQueue<Int>()
        #expect(queue.isEmpty && queue.first == nil && queue.removeFirst() == nil)
        for value in 1...5 { queue.append(value) }
        #expect(queue.count == 5 && queue.first == 1)
        #expect(queue.removeFirst() == 1)
        #expect(queue.removeFirst(upTo: 2) == [2, 3])
        #expect(queue.removeFirst(upTo: 10) == [4, 5])
        #expect(queue.removeFirst(upTo: -1) == [] && queue.isEmpty)
    }

    @Test func aLongRunOfAppendsAndRemovalsKeepsOrderAcrossWrapsAndGrowth() {
        var queue = FIFOQueue<Int>()
        var expected = 0
        for value in 0..<10_000 {
            queue.append(value)
            if value % 3 != 0, let first = queue.removeFirst() {
                #expect(first == expected)
                expected += 1
            }
        }
        #expect(queue.count == 10_000 - expected)
        #expect(queue.removeAll() == Array(expected..<10_000))
        #expect(queue.isEmpty)
    }

    @Test func removingByPredicateKeepsBothSidesInOrder() {
        var queue = FIFOQueue<Int>()
        for value in 0..<10 { queue.append(value) }
        _ = queue.removeFirst()
        #expect(queue.removeAll(where: { $0 % 2 == 0 }) == [2, 4, 6, 8])
        #expect(queue.removeFirst(while: { $0 < 5 }) == [1, 3])
        #expect(queue.removeAll() == [5, 7, 9])
    }

    @Test func predicatesSeeTheQueueInOrderAfterItWrapped() {
        var queue = FIFOQueue<Int>()
        for value in 0..<16 { queue.append(value) }
        #expect(queue.removeFirst(upTo: 10) == Array(0..<10))
        for value in 16..<30 { queue.append(value) }  // wraps, then grows with the head mid-ring
        #expect(queue.first == 10 && queue.count == 20)
        #expect(queue.removeAll(where: { $0 % 5 == 0 }) == [10, 15, 20, 25])
        #expect(queue.removeFirst(while: { $0 < 14 }) == [11, 12, 13])
        queue.append(30)
        #expect(queue.removeAll() == [14, 16, 17, 18, 19, 21, 22, 23, 24, 26, 27, 28, 29, 30])
    }

    final class Tracked {}

    /// The deadline queues behind locks rely on it: what leaves the queue is the caller's (released wherever the
    /// caller drops it), never kept for a later bulk release.
    @Test func aRemovedElementIsNoLongerHeld() {
        var queue = FIFOQueue<Tracked>()
        weak var single: Tracked?
        weak var swept: Tracked?
        do {
            let a = Tracked()
            let b = Tracked()
            single = a
            swept = b
            queue.append(a)
            queue.append(b)
            queue.append(Tracked())
        }
        _ = queue.removeFirst()
        #expect(single == nil)
        _ = queue.removeFirst(while: { _ in true })
        #expect(swept == nil)
        #expect(queue.isEmpty)
    }
}
