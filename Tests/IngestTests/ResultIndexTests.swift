import Foundation
import Ingest
import ReceiptModel
import Synchronization
import TestSupport
import Testing
import ServiceSupport

/// The result index alone: bounds, eviction order, pending, waiters (with a manual clock and timer, no network).
@Suite("result index")
struct ResultIndexTests {
    /// The index's clock, moved by hand in milliseconds (a `ManualClock` starting at 1,000,000 ms).
    final class ManualTime: Sendable {
        let clock = ManualClock(wallMilliseconds: 1_000_000)

        var now: Int64 { clock.wallMilliseconds() }
        /// Timers set and not run yet.
        var scheduledCount: Int { clock.pendingTimers }

        /// Moves the clock and runs the timers that came due (in due order, on this thread).
        func advance(by milliseconds: Int64) {
            clock.advance(by: .milliseconds(milliseconds))
        }
    }

    /// Collects wait outcomes.
    final class Outcomes: Sendable {
        private let list = Locked<[ResultIndex.WaitOutcome]>([])
        var all: [ResultIndex.WaitOutcome] { list.withLock { $0 } }
        func append(_ outcome: ResultIndex.WaitOutcome) { list.withLock { $0.append(outcome) } }
    }

    /// "id: outcome" of each waiter whose completion ran, in order.
    final class EndedWaiters: Sendable {
        private let list = Locked<[String]>([])
        var all: [String] { list.withLock { $0 } }
        func append(_ entry: String) { list.withLock { $0.append(entry) } }
    }

    private func makeIndex(
        _ time: ManualTime, maxEntries: Int = 1000, maxBytes: Int = 1 << 20, maxPending: Int = 1000,
        maxAgeMs: Int64 = 60_000
    ) -> ResultIndex {
        ResultIndex(
            limits: .init(maxEntries: maxEntries, maxBytes: maxBytes, maxPending: maxPending, maxAgeMs: maxAgeMs),
            clock: time.clock)
    }

    /// Reserves `id` as a POST would and reports Kafka's acknowledgement; records an issue when the index refuses.
    private func markPending(
        _ index: ResultIndex, _ id: String, fingerprint: String = ResultFixtures.fingerprint,
        caller: Caller = .unrestricted, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard case .write(let reservation) = index.admit(id, fingerprint: fingerprint, caller: caller) else {
            Issue.record("\(id) was not admitted for writing", sourceLocation: sourceLocation)
            return
        }
        index.accepted(reservation)
    }

    @Test("a recorded result is found by its id, as the exact message bytes; the first of duplicates wins")
    func recordAndLookup() throws {
        let time = ManualTime()
        let index = makeIndex(time)
        let first = try ResultFixtures.bytes("s-1")
        #expect(index.record(value: first, timestampMs: time.now) == .indexed(submissionId: "s-1", waitersCompleted: 0))
        #expect(index.lookup("s-1") == .result(first))
        #expect(index.lookup("s-2") == .unknown)

        let duplicate = try ResultFixtures.bytes("s-1", outcome: .rejected)
        #expect(index.record(value: duplicate, timestampMs: time.now) == .duplicate(submissionId: "s-1"))
        #expect(index.lookup("s-1") == .result(first))
        #expect(index.statistics.entries == 1)
        #expect(index.statistics.bytes == first.count)
        #expect(index.statistics.duplicates == 1)
    }

    @Test("messages that are not results are counted and not indexed", arguments: [
        Array("not json".utf8), Array("{}".utf8), Array(#"{"submission_id":"x","outcome":"maybe"}"#.utf8), [],
    ])
    func undecodable(value: [UInt8]) {
        let time = ManualTime()
        let index = makeIndex(time)
        #expect(index.record(value: value, timestampMs: time.now) == .undecodable)
        #expect(index.statistics.undecodable == 1)
        #expect(index.statistics.entries == 0)
    }

    @Test("over the entry limit the oldest inserted are evicted first")
    func entryBound() throws {
        let time = ManualTime()
        let index = makeIndex(time, maxEntries: 3)
        for number in 1...5 {
            index.record(value: try ResultFixtures.bytes("s-\(number)"), timestampMs: time.now)
        }
        #expect(index.statistics.entries == 3)
        #expect(index.statistics.evictedForEntries == 2)
        #expect(index.lookup("s-1") == .unknown)
        #expect(index.lookup("s-2") == .unknown)
        for number in 3...5 {
            #expect(index.lookup("s-\(number)") != .unknown)
        }
    }

    @Test("over the byte limit the oldest inserted are evicted first")
    func byteBound() throws {
        let time = ManualTime()
        let size = try ResultFixtures.bytes("s-1").count
        let index = makeIndex(time, maxBytes: size * 2 + size / 2)
        for number in 1...4 {
            index.record(value: try ResultFixtures.bytes("s-\(number)"), timestampMs: time.now)
        }
        #expect(index.statistics.entries == 2)
        #expect(index.statistics.bytes <= size * 2 + size / 2)
        #expect(index.statistics.evictedForBytes == 2)
        #expect(index.lookup("s-2") == .unknown)
        #expect(index.lookup("s-3") != .unknown)
        #expect(index.lookup("s-4") != .unknown)
    }

    @Test("results older than the age limit are not answered, are evicted, and old read-back is skipped")
    func ageBound() throws {
        let time = ManualTime()
        let index = makeIndex(time, maxAgeMs: 10_000)
        index.record(value: try ResultFixtures.bytes("old"), timestampMs: time.now)
        time.advance(by: 6_000)
        index.record(value: try ResultFixtures.bytes("newer"), timestampMs: time.now)
        time.advance(by: 5_000)
        #expect(index.lookup("old") == .unknown)
        #expect(index.lookup("newer") != .unknown)
        // The next insert evicts what expired.
        #expect(
            index.record(value: try ResultFixtures.bytes("read-back"), timestampMs: time.now - 20_000)
                == .expired(submissionId: "read-back"))
        #expect(index.lookup("read-back") == .unknown)
        #expect(index.statistics.evictedForAge == 1)
        #expect(index.statistics.entries == 1)
        #expect(index.statistics.expired == 1)
    }

    @Test("pending: known until its result arrives; bounded by count and age")
    func pending() throws {
        let time = ManualTime()
        let index = makeIndex(time, maxPending: 2, maxAgeMs: 10_000)
        markPending(index, "p-1")
        #expect(index.lookup("p-1") == .pending)
        let result = try ResultFixtures.bytes("p-1")
        index.record(value: result, timestampMs: time.now)
        #expect(index.lookup("p-1") == .result(result))
        #expect(index.statistics.pending == 0)
        // A final result already known is answered, not marked pending again.
        #expect(index.admit("p-1", fingerprint: ResultFixtures.fingerprint, caller: .unrestricted) == .answer(result))
        #expect(index.lookup("p-1") == .result(result))

        markPending(index, "p-2")
        markPending(index, "p-3")
        markPending(index, "p-4")
        #expect(index.statistics.pending == 2)
        #expect(index.lookup("p-2") == .unknown)
        #expect(index.lookup("p-3") == .pending)
        time.advance(by: 10_001)
        #expect(index.lookup("p-4") == .unknown)
        markPending(index, "p-5")
        #expect(index.statistics.pending == 1)
    }

    @Test("many pending marks cleared by results do not grow the index")
    func pendingChurn() throws {
        let time = ManualTime()
        let index = makeIndex(time, maxEntries: 10, maxPending: 10)
        let value = try ResultFixtures.bytes("churn")
        for number in 0..<5_000 {
            let id = "c-\(number)"
            markPending(index, id)
            // Same bytes under another id are not a result for it; decode-and-reencode per id.
            var result = try MessageCoding.decode(VerificationResult.self, from: value)
            result.submissionId = id
            index.record(value: VerificationResultJSON.encode(result), timestampMs: time.now)
        }
        #expect(index.statistics.entries == 10)
        #expect(index.statistics.pending == 0)
    }

    @Test("a waiter gets the result when it is recorded, once; its timer firing later does nothing")
    func waiterFulfilled() throws {
        let time = ManualTime()
        let index = makeIndex(time)
        let outcomes = Outcomes()
        index.wait(for: "w-1", timeoutMs: 1000) { outcomes.append($0) }
        index.wait(for: "w-1", timeoutMs: 1000) { outcomes.append($0) }
        #expect(outcomes.all.isEmpty)
        #expect(index.statistics.waiters == 2)
        let result = try ResultFixtures.bytes("w-1")
        #expect(
            index.record(value: result, timestampMs: time.now) == .indexed(submissionId: "w-1", waitersCompleted: 2))
        #expect(outcomes.all == [.verdict(result), .verdict(result)])
        time.advance(by: 2000)
        #expect(outcomes.all.count == 2)
        #expect(index.statistics.waiters == 0)
    }

    @Test("a waiter times out after its time; a result recorded later is still indexed")
    func waiterTimesOut() throws {
        let time = ManualTime()
        let index = makeIndex(time)
        let outcomes = Outcomes()
        index.wait(for: "w-2", timeoutMs: 500) { outcomes.append($0) }
        time.advance(by: 499)
        #expect(outcomes.all.isEmpty)
        time.advance(by: 1)
        #expect(outcomes.all == [.timedOut])
        #expect(index.statistics.waiters == 0)
        let result = try ResultFixtures.bytes("w-2")
        #expect(
            index.record(value: result, timestampMs: time.now) == .indexed(submissionId: "w-2", waitersCompleted: 0))
        #expect(outcomes.all == [.timedOut])
    }

    @Test("waiting for a result already indexed completes at once, without a timer")
    func waitForKnown() throws {
        let time = ManualTime()
        let index = makeIndex(time)
        let result = try ResultFixtures.bytes("k-1")
        index.record(value: result, timestampMs: time.now)
        let outcomes = Outcomes()
        index.wait(for: "k-1", timeoutMs: 1000) { outcomes.append($0) }
        #expect(outcomes.all == [.verdict(result)])
        #expect(time.scheduledCount == 0)
    }

    @Test("stopWaiting ends every waiter with a timeout, and later waits at once")
    func stopWaiting() {
        let time = ManualTime()
        let index = makeIndex(time)
        let outcomes = Outcomes()
        index.wait(for: "a", timeoutMs: 10_000) { outcomes.append($0) }
        index.wait(for: "b", timeoutMs: 10_000) { outcomes.append($0) }
        index.stopWaiting()
        #expect(outcomes.all == [.timedOut, .timedOut])
        index.wait(for: "c", timeoutMs: 10_000) { outcomes.append($0) }
        #expect(outcomes.all.count == 3)
        time.advance(by: 20_000)
        #expect(outcomes.all.count == 3)
    }

    @Test("waiters share one timer: many waits set it once, verdicts leave nothing to run, each times out on time")
    func oneTimerForManyWaiters() throws {
        let time = ManualTime()
        let index = makeIndex(time)
        let outcomes = Outcomes()
        for n in 0..<100 {
            index.wait(for: "m-\(n)", timeoutMs: 1_000) { outcomes.append($0) }
        }
        #expect(time.scheduledCount == 1)
        for n in 0..<99 {
            index.record(value: try ResultFixtures.bytes("m-\(n)"), timestampMs: time.now)
        }
        #expect(outcomes.all.count == 99)
        // A shorter wait gets its own, earlier timer; the longer ones keep theirs.
        index.wait(for: "short", timeoutMs: 100) { outcomes.append($0) }
        #expect(time.scheduledCount == 2)
        time.advance(by: 100)
        #expect(outcomes.all.count == 100)
        #expect(outcomes.all.last == .timedOut)
        time.advance(by: 899)
        #expect(outcomes.all.count == 100)
        time.advance(by: 1)
        #expect(outcomes.all.count == 101)
        #expect(index.statistics.waiters == 0)
        time.advance(by: 10_000)
        #expect(time.scheduledCount == 0)
    }

    @Test("waiters of different lengths each time out at their own deadline")
    func waitersInAnyOrder() {
        let time = ManualTime()
        let index = makeIndex(time)
        let outcomes = Outcomes()  // which waiter ended, in order
        let ended = EndedWaiters()
        for (id, timeoutMs) in [("late", 300), ("early", 100), ("middle", 200)] {
            index.wait(for: id, timeoutMs: timeoutMs) { outcome in
                outcomes.append(.verdict(Array(id.utf8)))
                ended.append("\(id): \(outcome)")
            }
        }
        time.advance(by: 99)
        #expect(ended.all.isEmpty)
        time.advance(by: 1)
        #expect(outcomes.all == [.verdict(Array("early".utf8))])
        #expect(ended.all == ["early: timedOut"])
        time.advance(by: 99)
        #expect(ended.all == ["early: timedOut"])
        time.advance(by: 1)
        #expect(outcomes.all.count == 2)
        #expect(ended.all == ["early: timedOut", "middle: timedOut"])
        time.advance(by: 99)
        #expect(ended.all == ["early: timedOut", "middle: timedOut"])
        time.advance(by: 1)
        #expect(outcomes.all.count == 3)
        #expect(ended.all == ["early: timedOut", "middle: timedOut", "late: timedOut"])
    }

    @Test("a result whose predecessor expired but was not evicted yet is indexed, not dropped as a duplicate")
    func expiredPredecessorIsReplaced() throws {
        let time = ManualTime()
        let index = makeIndex(time, maxAgeMs: 10_000)
        // A fresh result first, then an old one (read back out of order): the old one sits behind the fresh one.
        index.record(value: try ResultFixtures.bytes("fresh"), timestampMs: time.now)
        index.record(value: try ResultFixtures.bytes("old"), timestampMs: time.now - 9_000)
        time.advance(by: 2_000)
        #expect(index.lookup("old") == .unknown)
        let again = try ResultFixtures.bytes("old", outcome: .rejected)
        #expect(index.record(value: again, timestampMs: time.now) == .indexed(submissionId: "old", waitersCompleted: 0))
        #expect(index.lookup("old") == .result(again))
        #expect(index.statistics.entries == 2)
        #expect(index.statistics.bytes == (try ResultFixtures.bytes("fresh")).count + again.count)
        // The stale place of the replaced entry in the eviction order removes nothing when it reaches the front.
        time.advance(by: 9_000)
        index.record(value: try ResultFixtures.bytes("newest"), timestampMs: time.now)
        #expect(index.lookup("old") == .result(again))
        #expect(index.lookup("fresh") == .unknown)
    }

    @Test("with the real Dispatch timer, a short wait times out on its own")
    func dispatchTimer() async {
        let index = ResultIndex()
        let outcomes = Outcomes()
        index.wait(for: "d-1", timeoutMs: 20) { outcomes.append($0) }
        #expect(await eventually { !outcomes.all.isEmpty })
        #expect(outcomes.all == [.timedOut])
    }
}
