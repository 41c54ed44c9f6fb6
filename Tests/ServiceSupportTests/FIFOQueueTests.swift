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

    @Test func aLongRunOfAppendsAndRemovalsKeepsOrderAcrossCompaction() {
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
}
