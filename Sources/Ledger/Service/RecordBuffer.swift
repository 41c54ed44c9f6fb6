import Foundation
import Kafka

/// Messages fetched and not yet applied, between the consumer's poll thread (`append`) and the ledger's apply lanes
/// (`takeBatch`). Bounded by its owner: `isOverHighWater` tells when to pause fetching, `isUnderLowWater` when to
/// resume.
///
/// **Lanes.** The worker applies up to `lanes` batches at once, each in its own transaction on its own connection
/// (`LedgerWorker`). A partition's messages must still be applied in offset order, one batch after the other, as a
/// single applier would: so a partition belongs to the lane that took a batch of it until every batch of it that
/// lane took is released (`release`, after its commit), and no other lane takes it meanwhile. Between partitions
/// the lanes are as independent as two ledger instances are: the database's locks order what they share (a
/// purchase, a wallet, an owner's ids).
///
/// A lane takes free partitions only up to its share (of `lanes`) of the partitions in play (with messages waiting,
/// or held by a lane), so that with a backlog the lanes split the partitions between them instead of the first lane
/// taking them all.
///
/// `@unchecked Sendable`: every stored property is read and written only while `condition` is locked.
final class RecordBuffer: @unchecked Sendable {
    private let condition = NSCondition()
    /// Each partition's waiting messages in offset order; a partition with none has no entry.
    private var queues: [TopicPartition: PartitionQueue] = [:]
    private var total = 0
    /// Numbers the messages in arrival order across partitions: a batch takes the oldest first.
    private var arrivals: UInt64 = 0
    /// The lane each partition belongs to while that lane has batches of it not released, and how many.
    private var holders: [TopicPartition: (lane: Int, batches: Int)] = [:]
    /// How many times partitions were dropped, and when each was last (`withoutDropped`).
    private var drops: UInt64 = 0
    private var droppedAt: [TopicPartition: UInt64] = [:]
    private var closed = false
    let highWater: Int
    let lanes: Int

    init(highWater: Int, lanes: Int = 1) {
        self.highWater = max(highWater, 1)
        self.lanes = max(lanes, 1)
    }

    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return total
    }

    func append(_ record: LedgerRecord) {
        condition.lock()
        arrivals &+= 1
        queues[record.partitionKey, default: PartitionQueue()].append(record, arrival: arrivals)
        total += 1
        // Every lane: a signal could wake the one lane that may not take this partition.
        condition.broadcast()
        condition.unlock()
    }

    /// A batch and how many drops (`drop`) came before it was taken.
    struct Taken: Sendable {
        let records: [LedgerRecord]
        let dropsBefore: UInt64
    }

    /// Up to `limit` records for `lane`, oldest first, from the partitions it holds and free ones up to its share,
    /// waiting up to `timeout` for one; empty when none came or the buffer is closed. The partitions of what it
    /// returns belong to `lane` until the batch is released (`release`).
    func takeBatch(limit: Int, timeout: Duration, lane: Int = 0) -> Taken {
        condition.lock()
        defer { condition.unlock() }
        return Taken(records: takeLocked(limit: limit, timeout: timeout, lane: lane), dropsBefore: drops)
    }

    /// `items` (of a batch taken when `dropsBefore` drops had been made) without those of partitions dropped since:
    /// revoked, or sought back to their stored offsets (`PartitionStarts.resolveAwaiting`), so what was fetched of
    /// them before is read again from there and never applied out of order, whichever lane holds the batch.
    func withoutDropped<Item>(_ items: [Item], since dropsBefore: UInt64, partition: (Item) -> TopicPartition) -> [Item] {
        condition.lock()
        defer { condition.unlock() }
        guard drops > dropsBefore else { return items }
        return items.filter { (droppedAt[partition($0)] ?? 0) <= dropsBefore }
    }

    private func takeLocked(limit: Int, timeout: Duration, lane: Int) -> [LedgerRecord] {
        let deadline = Date().addingTimeInterval(timeout / .seconds(1))
        var chosen = partitionsTakeable(by: lane)
        while chosen.isEmpty, !closed, condition.wait(until: deadline) {
            chosen = partitionsTakeable(by: lane)
        }
        if chosen.isEmpty { chosen = partitionsTakeable(by: lane) }
        guard !chosen.isEmpty else { return [] }
        var taking = chosen.map { (partition: $0, queue: queues.removeValue(forKey: $0) ?? PartitionQueue()) }
        var batch: [LedgerRecord] = []
        batch.reserveCapacity(min(limit, total))
        while batch.count < limit {
            var oldest: Int?
            for index in taking.indices where !taking[index].queue.isEmpty {
                if let current = oldest, taking[current].queue.firstArrival <= taking[index].queue.firstArrival { continue }
                oldest = index
            }
            guard let index = oldest else { break }
            batch.append(taking[index].queue.removeFirst())
        }
        total -= batch.count
        var held: Set<TopicPartition> = []
        for record in batch where held.insert(record.partitionKey).inserted {
            holders[record.partitionKey, default: (lane, 0)].batches += 1
        }
        for (partition, queue) in taking where !queue.isEmpty { queues[partition] = queue }
        return batch
    }

    /// Gives back the partitions of `batch` (taken by `lane`): applied, or given up. Once a lane released every batch
    /// of a partition, any lane may take it.
    func release(_ batch: [LedgerRecord], lane: Int = 0) {
        guard !batch.isEmpty else { return }
        condition.lock()
        var released: Set<TopicPartition> = []
        for record in batch where released.insert(record.partitionKey).inserted {
            guard let holder = holders[record.partitionKey], holder.lane == lane else { continue }
            holders[record.partitionKey] = holder.batches > 1 ? (lane, holder.batches - 1) : nil
        }
        condition.broadcast()
        condition.unlock()
    }

    /// Forgets the records of `partitions` (revoked: their next owner reads them again from the stored offsets).
    func drop(_ partitions: Set<TopicPartition>) {
        condition.lock()
        drops += 1
        for partition in partitions {
            droppedAt[partition] = drops
            if let queue = queues.removeValue(forKey: partition) { total -= queue.count }
        }
        condition.unlock()
    }

    /// Wakes waiting `takeBatch` calls; later calls return what is left, then nothing.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    var isOverHighWater: Bool { count >= highWater }
    var isUnderLowWater: Bool { count <= highWater / 2 }

    /// The partitions with messages that `lane` may take now: those it holds, then free ones, oldest first, up to
    /// its share of the partitions in play (with one lane, every one).
    private func partitionsTakeable(by lane: Int) -> [TopicPartition] {
        var own: [TopicPartition] = []
        var free: [(arrival: UInt64, partition: TopicPartition)] = []
        for (partition, queue) in queues {
            if let holder = holders[partition] {
                if holder.lane == lane { own.append(partition) }
            } else {
                free.append((queue.firstArrival, partition))
            }
        }
        // The partitions in play: those with messages waiting and those a lane holds (applying, or taken ahead).
        let inPlay = queues.count + holders.keys.count { queues[$0] == nil }
        let share = lanes == 1 ? inPlay : (inPlay + lanes - 1) / lanes
        // What the lane holds counts against its share even with nothing waiting: a lane whose batch is stuck (on a
        // lock, a failing database) takes no more partitions ahead of it than its share.
        let held = holders.values.count { $0.lane == lane }
        let claimed = max(0, share - held)
        guard claimed > 0, !free.isEmpty else { return own }
        free.sort { $0.arrival < $1.arrival }
        return own + free.prefix(claimed).map(\.partition)
    }
}

/// One partition's waiting messages in offset order, with their arrival numbers.
private struct PartitionQueue {
    private var records: [LedgerRecord] = []
    private var arrivalNumbers: [UInt64] = []
    private var head = 0

    var isEmpty: Bool { head == records.count }
    var count: Int { records.count - head }
    /// The arrival number of the first waiting message (call only when not empty).
    var firstArrival: UInt64 { arrivalNumbers[head] }

    mutating func append(_ record: LedgerRecord, arrival: UInt64) {
        records.append(record)
        arrivalNumbers.append(arrival)
    }

    mutating func removeFirst() -> LedgerRecord {
        let record = records[head]
        head += 1
        if head == records.count {
            records.removeAll(keepingCapacity: true)
            arrivalNumbers.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 4_096, head * 2 > records.count {
            records.removeFirst(head)
            arrivalNumbers.removeFirst(head)
            head = 0
        }
        return record
    }
}
