import Foundation
import Kafka
import ServiceSupport
import Testing
import TestSupport

/// `startingOffsets`: an owner that keeps its offsets elsewhere (the ledger's database) decides where assigned
/// partitions start, whatever the group's committed offsets or `auto.offset.reset` say.
@Suite("Starting offsets chosen by the consumer's owner", .serialized)
struct KafkaStartingOffsetsTests {
    @Test func assignedPartitionsStartWhereTheOwnerSaysAndAtTheBeginningWhenItKnowsNothing() async throws {
        let stored = uniqueName("stored")
        let unknown = uniqueName("unknown")
        let cluster = try await EmbeddedKafkaProcess.start(topics: [(stored, 1), (unknown, 1)])
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        defer { producer.close(timeout: .seconds(5)) }
        _ = try await produceNumbered(producer, topic: stored, count: 10)
        _ = try await produceNumbered(producer, topic: unknown, count: 4)

        let asked = Locked<[TopicPartition]>([])
        let delegate = RecordingDelegate()
        // "latest" would skip everything already written: the owner's answer must win over it.
        let consumer = try KafkaConsumer(
            configuration: consumerConfiguration(cluster.bootstrapServers, ["auto.offset.reset": "latest"]),
            groupId: uniqueName("group"), topics: [stored, unknown], delegate: delegate, logger: quietLogger,
            startingOffsets: { partitions in
                asked.withLock { $0 += partitions }
                return [TopicPartition(topic: stored, partition: 0): 7]
            })
        consumer.start()
        defer { consumer.close(timeout: .seconds(10)) }
        #expect(await eventually(timeout: .seconds(20)) { delegate.messages.count == 3 + 4 })
        let byTopic = Dictionary(grouping: delegate.messages, by: \.topic)
        #expect(byTopic[stored]?.map(\.offset) == [7, 8, 9])
        #expect(byTopic[unknown]?.map(\.offset) == [0, 1, 2, 3])
        #expect(Set(asked.withLock { $0 }) == [TopicPartition(topic: stored, partition: 0), TopicPartition(topic: unknown, partition: 0)])
    }
}
