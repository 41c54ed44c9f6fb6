import Kafka
@testable import Ledger
import Testing

@Suite struct RecordBufferTests {
    static func record(_ partition: Int32, _ offset: Int64) -> LedgerRecord {
        LedgerRecord(topic: "t", partition: partition, offset: offset, value: [])
    }

    @Test func batchesAreTakenInArrivalOrderUpToTheLimit() {
        let buffer = RecordBuffer(highWater: 4)
        for offset in 0..<5 { buffer.append(Self.record(0, Int64(offset))) }
        #expect(buffer.isOverHighWater)
        #expect(buffer.takeBatch(limit: 3, timeout: .zero).records.map(\.offset) == [0, 1, 2])
        #expect(buffer.isUnderLowWater)
        #expect(buffer.takeBatch(limit: 3, timeout: .zero).records.map(\.offset) == [3, 4])
        #expect(buffer.takeBatch(limit: 3, timeout: .milliseconds(10)).records.isEmpty)
    }

    @Test func revokedPartitionsAreForgotten() {
        let buffer = RecordBuffer(highWater: 100)
        buffer.append(Self.record(0, 0))
        buffer.append(Self.record(1, 0))
        buffer.append(Self.record(0, 1))
        buffer.drop([TopicPartition(topic: "t", partition: 0)])
        #expect(buffer.takeBatch(limit: 10, timeout: .zero).records.map(\.partition) == [1])
    }

    @Test func closeWakesAWaitingTaker() async {
        let buffer = RecordBuffer(highWater: 10)
        async let taken = Task.detached { buffer.takeBatch(limit: 10, timeout: .seconds(30)).records }.value
        try? await Task.sleep(for: .milliseconds(50))
        buffer.close()
        #expect(await taken.isEmpty)
    }

    // MARK: Lanes

    static func partition(_ number: Int32) -> TopicPartition { TopicPartition(topic: "t", partition: number) }

    @Test func aPartitionBelongsToTheLaneThatTookItUntilEveryBatchOfItIsReleased() {
        let buffer = RecordBuffer(highWater: 100, lanes: 2)
        for offset in 0..<4 { buffer.append(Self.record(0, Int64(offset))) }
        let first = buffer.takeBatch(limit: 2, timeout: .zero, lane: 0).records
        #expect(first.map(\.offset) == [0, 1])
        // The other lane may not take what is left of partition 0: it would apply offsets 2 and 3 beside 0 and 1.
        #expect(buffer.takeBatch(limit: 10, timeout: .zero, lane: 1).records.isEmpty)
        // The lane holding it takes its next batch ahead, before the first is released.
        let second = buffer.takeBatch(limit: 1, timeout: .zero, lane: 0).records
        #expect(second.map(\.offset) == [2])
        buffer.release(first, lane: 0)
        #expect(buffer.takeBatch(limit: 10, timeout: .zero, lane: 1).records.isEmpty)
        buffer.release(second, lane: 0)
        #expect(buffer.takeBatch(limit: 10, timeout: .zero, lane: 1).records.map(\.offset) == [3])
    }

    @Test func withABacklogTheLanesSplitThePartitions() {
        let buffer = RecordBuffer(highWater: 100, lanes: 2)
        for partition in Int32(0)..<4 {
            for offset in 0..<3 { buffer.append(Self.record(partition, Int64(offset))) }
        }
        // Lane 0 claims the two partitions that arrived first (its share of four), oldest first.
        let first = buffer.takeBatch(limit: 100, timeout: .zero, lane: 0).records
        #expect(Set(first.map(\.partition)) == [0, 1])
        #expect(first.filter { $0.partition == 0 }.map(\.offset) == [0, 1, 2])
        // Lane 1 takes the other two.
        let second = buffer.takeBatch(limit: 100, timeout: .zero, lane: 1).records
        #expect(Set(second.map(\.partition)) == [2, 3])
        #expect(buffer.count == 0)
    }

    @Test func aBatchTakesTheOldestMessagesAcrossItsPartitionsFirst() {
        let buffer = RecordBuffer(highWater: 100)
        buffer.append(Self.record(0, 0))
        buffer.append(Self.record(1, 0))
        buffer.append(Self.record(0, 1))
        buffer.append(Self.record(1, 1))
        let batch = buffer.takeBatch(limit: 3, timeout: .zero).records
        #expect(batch.map { "\($0.partition):\($0.offset)" } == ["0:0", "1:0", "0:1"])
        #expect(buffer.count == 1)
    }

    @Test func aLaneWaitingForAPartitionTheOtherHoldsWakesWhenItIsReleased() async {
        let buffer = RecordBuffer(highWater: 100, lanes: 2)
        buffer.append(Self.record(0, 0))
        buffer.append(Self.record(0, 1))
        let first = buffer.takeBatch(limit: 1, timeout: .zero, lane: 0).records
        async let taken = Task.detached { buffer.takeBatch(limit: 10, timeout: .seconds(30), lane: 1).records }.value
        buffer.release(first, lane: 0)
        #expect(await taken.map(\.offset) == [1])
    }

    @Test func recordsOfAPartitionDroppedAfterTheirBatchWasTakenAreNotApplied() {
        let buffer = RecordBuffer(highWater: 100)
        buffer.append(Self.record(0, 0))
        buffer.append(Self.record(1, 0))
        let taken = buffer.takeBatch(limit: 10, timeout: .zero, lane: 0)
        #expect(buffer.withoutDropped(taken.records, since: taken.dropsBefore, partition: \.partitionKey).count == 2)
        // Revoked, or sought back to its stored offset: what the batch holds of it is read again from there.
        buffer.drop([Self.partition(0)])
        #expect(
            buffer.withoutDropped(taken.records, since: taken.dropsBefore, partition: \.partitionKey).map(\.partition)
                == [1])
        // A batch taken after the drop keeps what it took.
        buffer.append(Self.record(0, 0))
        buffer.release(taken.records, lane: 0)
        let later = buffer.takeBatch(limit: 10, timeout: .zero)
        #expect(buffer.withoutDropped(later.records, since: later.dropsBefore, partition: \.partitionKey).count == 1)
    }

    @Test func aLaneApplyingAPartitionTakesNoOtherAheadBeyondItsShare() {
        let buffer = RecordBuffer(highWater: 100, lanes: 2)
        buffer.append(Self.record(0, 0))
        let stuck = buffer.takeBatch(limit: 10, timeout: .zero, lane: 0).records
        #expect(stuck.map(\.partition) == [0])
        buffer.append(Self.record(1, 0))
        // Partition 0 (nothing waiting) still counts against lane 0's share while its batch is applied: partition 1
        // is left to lane 1, not queued behind lane 0's batch.
        #expect(buffer.takeBatch(limit: 10, timeout: .zero, lane: 0).records.isEmpty)
        #expect(buffer.takeBatch(limit: 10, timeout: .zero, lane: 1).records.map(\.partition) == [1])
    }
}
