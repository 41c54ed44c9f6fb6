import Dispatch
import ServiceSupport
import Testing

@testable import Kafka

@Suite("FetchWaker")
struct FetchWakerTests {
    private static func partition(_ number: Int32) -> TopicPartition {
        TopicPartition(topic: "t", partition: number)
    }

    @Test("partitions resumed while a wake runs are woken together by one more wake, after it")
    func coalescesWhileRunning() {
        let calls = Locked<[[TopicPartition]]>([])
        let firstStarted = DispatchSemaphore(value: 0)
        let releaseFirst = DispatchSemaphore(value: 0)
        let allDone = DispatchSemaphore(value: 0)
        let waker = FetchWaker { partitions in
            let count = calls.withLock { calls in
                calls.append(partitions)
                return calls.count
            }
            if count == 1 {
                firstStarted.signal()
                releaseFirst.wait()
            } else {
                allDone.signal()
            }
        }
        waker.request([Self.partition(0)])
        firstStarted.wait()
        // While the first wake blocks: three requests, one of them a partition twice.
        waker.request([Self.partition(2)])
        waker.request([Self.partition(1), Self.partition(2)])
        waker.request([])
        releaseFirst.signal()
        allDone.wait()
        // Once the queue is idle again, a new request starts a wake of its own.
        waker.request([Self.partition(3)])
        allDone.wait()
        #expect(
            calls.withLock { $0 } == [
                [Self.partition(0)], [Self.partition(1), Self.partition(2)], [Self.partition(3)],
            ])
    }

    @Test("an empty request wakes nothing")
    func emptyRequest() {
        let calls = Locked<[[TopicPartition]]>([])
        let woken = DispatchSemaphore(value: 0)
        let waker = FetchWaker { partitions in
            calls.withLock { $0.append(partitions) }
            woken.signal()
        }
        waker.request([])
        waker.request([Self.partition(0)])
        woken.wait()
        #expect(calls.withLock { $0 } == [[Self.partition(0)]])
    }
}
