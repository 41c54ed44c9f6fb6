import Foundation
import Kafka
import ServiceSupport
import Testing
import TestSupport

/// `requestCommit` against a cluster in a separate `embedded-kafka` process: stored offsets reach the group
/// coordinator within the commit interval, not at the next periodic auto-commit.
@Suite("Prompt commits against an embedded-kafka process", .serialized)
struct KafkaPromptCommitTests {
    @Test("requestCommit commits stored offsets long before auto-commit would, merging requests within the interval")
    func storedOffsetsAreCommittedPromptly() async throws {
        let topic = uniqueName("prompt-commit")
        let group = uniqueName("group")
        let cluster = try await EmbeddedKafkaProcess.start(topics: [(topic, 1)])
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        defer { producer.close(timeout: .seconds(5)) }
        _ = try await produceNumbered(producer, topic: topic, count: 10)

        let partition = TopicPartition(topic: topic, partition: 0)
        let delegate = RecordingDelegate()
        let metrics = MetricsRegistry()
        // Auto-commit every minute: anything committed within this test was committed by requestCommit.
        let consumer = try KafkaConsumer(
            configuration: consumerConfiguration(cluster.bootstrapServers, ["auto.commit.interval.ms": "60000"]),
            groupId: group, topics: [topic], delegate: delegate, logger: quietLogger, metrics: metrics,
            commitInterval: .milliseconds(500))
        consumer.start()
        defer { consumer.close(timeout: .seconds(10)) }
        #expect(await eventually { delegate.messages.count == 10 })
        func committed() -> Int64? { (try? consumer.committedOffsets([partition], timeout: .seconds(5)))?[partition] }

        // Stored but not requested: nothing reaches the coordinator.
        try consumer.storeOffset(partition, nextOffset: 3)
        try await Task.sleep(for: .seconds(1))
        #expect(committed() == nil)
        #expect(consumer.commitRequestCount == 0)

        // Requested after a quiet interval: committed at once.
        consumer.requestCommit()
        #expect(await eventually(timeout: .seconds(5)) { committed() == 3 })
        #expect(consumer.commitRequestCount == 1)

        // Two more stores within the interval: one trailing commit (from the poll thread) carries the last one.
        try consumer.storeOffset(partition, nextOffset: 6)
        consumer.requestCommit()
        try consumer.storeOffset(partition, nextOffset: 8)
        consumer.requestCommit()
        #expect(await eventually(timeout: .seconds(5)) { committed() == 8 })
        #expect(consumer.commitRequestCount == 2)
        #expect(metrics.render().contains("kafka_consumer_commit_requests_total 2"))
    }
}
