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
        #expect(buffer.takeBatch(limit: 3, timeout: .zero).map(\.offset) == [0, 1, 2])
        #expect(buffer.isUnderLowWater)
        #expect(buffer.takeBatch(limit: 3, timeout: .zero).map(\.offset) == [3, 4])
        #expect(buffer.takeBatch(limit: 3, timeout: .milliseconds(10)).isEmpty)
    }

    @Test func revokedPartitionsAreForgotten() {
        let buffer = RecordBuffer(highWater: 100)
        buffer.append(Self.record(0, 0))
        buffer.append(Self.record(1, 0))
        buffer.append(Self.record(0, 1))
        buffer.drop([TopicPartition(topic: "t", partition: 0)])
        #expect(buffer.takeBatch(limit: 10, timeout: .zero).map(\.partition) == [1])
    }

    @Test func closeWakesAWaitingTaker() async {
        let buffer = RecordBuffer(highWater: 10)
        async let taken = Task.detached { buffer.takeBatch(limit: 10, timeout: .seconds(30)) }.value
        try? await Task.sleep(for: .milliseconds(50))
        buffer.close()
        #expect(await taken.isEmpty)
    }
}
