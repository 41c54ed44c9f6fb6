import Foundation
import ServiceSupport
import Testing

@Suite struct LockedTests {
    @Test func threadsChangingTheValueNeverLoseAnUpdate() async {
        let counter = Locked(0)
        let log = Locked<[Int]>([])
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for step in 0..<5_000 {
                        counter.withLock { $0 += 1 }
                        if step % 1_000 == 0 { log.withLock { $0.append(worker) } }
                    }
                }
            }
        }
        #expect(counter.withLock { $0 } == 40_000)
        #expect(log.withLock { $0.count } == 40)
    }

    @Test func bodiesRunOneAtATime() {
        let inside = Locked(0)
        let overlaps = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 200) { _ in
            inside.withLock { count in
                count += 1
                if count > 1 { overlaps.withLock { $0 += 1 } }
                usleep(50)
                count -= 1
            }
        }
        #expect(overlaps.withLock { $0 } == 0)
    }

    @Test func errorsAndResultsPassThrough() throws {
        struct Refused: Error {}
        let value = Locked("a")
        #expect(throws: Refused.self) {
            try value.withLock { (_: inout String) throws(Refused) in throw Refused() }
        }
        #expect(value.withLock { text -> Int in
            text += "b"
            return text.count
        } == 2)
    }
}
