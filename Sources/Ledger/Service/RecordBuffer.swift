import Foundation
import Kafka

/// Messages fetched and not yet applied, between the consumer's poll thread (`append`) and the ledger's worker
/// thread (`takeBatch`). Bounded by its owner: `isOverHighWater` tells when to pause fetching, `isUnderLowWater`
/// when to resume.
///
/// `@unchecked Sendable`: every stored property is read and written only while `condition` is locked.
final class RecordBuffer: @unchecked Sendable {
    private let condition = NSCondition()
    private var records: [LedgerRecord] = []
    private var head = 0
    private var closed = false
    let highWater: Int

    init(highWater: Int) {
        self.highWater = max(highWater, 1)
    }

    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return records.count - head
    }

    func append(_ record: LedgerRecord) {
        condition.lock()
        records.append(record)
        condition.signal()
        condition.unlock()
    }

    /// Up to `limit` records in arrival order, waiting up to `timeout` for the first; empty when none came or the
    /// buffer is closed.
    func takeBatch(limit: Int, timeout: Duration) -> [LedgerRecord] {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(timeout / .seconds(1))
        while records.count == head, !closed {
            if !condition.wait(until: deadline) { break }
        }
        guard records.count > head else { return [] }
        let end = min(head + limit, records.count)
        let batch = Array(records[head..<end])
        head = end
        if head > 4_096, head * 2 > records.count {
            records.removeFirst(head)
            head = 0
        }
        return batch
    }

    /// Forgets the records of `partitions` (revoked: their next owner reads them again from the stored offsets).
    func drop(_ partitions: Set<TopicPartition>) {
        condition.lock()
        records = records[head...].filter { !partitions.contains($0.partitionKey) }
        head = 0
        condition.unlock()
    }

    /// Wakes a waiting `takeBatch`; later calls return what is left, then nothing.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    var isOverHighWater: Bool { count >= highWater }
    var isUnderLowWater: Bool { count <= highWater / 2 }
}
