import EmbeddedKafka
import Foundation
import Kafka
import ServiceSupport
import Synchronization
import Testing
import TestSupport

/// Fault injection on an in-process mock cluster (`EmbeddedKafkaCluster`): brokers going down and up, request
/// errors, latency, and the clients' bounded shutdown.
@Suite("Kafka under faults", .serialized)
struct KafkaFaultTests {
    typealias Delivery = Result<KafkaDeliveryReport, KafkaError>

    @Test("a broker down and up: every message sent arrives exactly once and the consumer resumes")
    func brokerDownAndUp() async throws {
        let topic = uniqueName("outage")
        let cluster = try EmbeddedKafkaCluster(brokers: 1, topics: [(topic, 2)], logger: quietLogger)
        defer { cluster.close() }
        let delegate = RecordingDelegate()
        let consumer = try KafkaConsumer(
            configuration: consumerConfiguration(cluster.bootstrapServers), groupId: uniqueName("group"),
            topics: [topic], delegate: delegate, logger: quietLogger)
        consumer.start()
        defer { consumer.close(timeout: .seconds(5)) }
        try #require(await eventually { delegate.assigned.count == 2 })

        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        defer { producer.close(timeout: .seconds(5)) }
        let before = try await produceNumbered(producer, topic: topic, count: 20, prefix: "before")
        #expect(await eventually { delegate.messages.count == 20 })
        #expect(await eventually(timeout: .seconds(5)) { producer.isConnected })

        cluster.setBrokerDown(1)
        let outcomes = Collected<Delivery>()
        for index in 0..<30 {
            try producer.send(topic: topic, key: Array("k\(index)".utf8), value: Array("during-\(index)".utf8)) {
                outcomes.append($0)
            }
        }
        #expect(await eventually(timeout: .seconds(5)) { !producer.isConnected })
        // The producer's own report from while the broker is down still holds all 30: none was acknowledged.
        #expect(
            await eventually { producer.statistics.map { $0.brokersUp == 0 && $0.queuedMessages == 30 } ?? false })
        #expect(outcomes.values.allSatisfy { (try? $0.get()) == nil })  // nothing acknowledged while down
        cluster.setBrokerUp(1)

        // Produce requests failing with retriable errors are retried without duplicates (idempotence).
        cluster.pushRequestErrors(
            apiKey: 0,
            errors: [KafkaErrorCode.notEnoughReplicas, KafkaErrorCode.notEnoughReplicas, KafkaErrorCode.notEnoughReplicas])
        let after = try await produceNumbered(producer, topic: topic, count: 10, prefix: "after")

        #expect(await eventually { outcomes.count == 30 })
        #expect(outcomes.values.allSatisfy { (try? $0.get()) != nil })
        // A duplicate would lie below the last acknowledged offset of its partition: once the consumer has read up
        // to those, it has seen everything the log holds.
        let acknowledged = before + after + outcomes.values.compactMap { try? $0.get() }
        let lastOffsets = Dictionary(acknowledged.map { ($0.partition, $0.offset) }, uniquingKeysWith: max)
        #expect(
            await eventually {
                let read = Dictionary(delegate.messages.map { ($0.partition, $0.offset) }, uniquingKeysWith: max)
                return lastOffsets.allSatisfy { read[$0.key, default: -1] >= $0.value }
            })
        // The log's records, each once: after the outage the consumer may read a stretch again (at least once: what it
        // read since its last commit), which is the same offsets; a duplicate in the log is another offset.
        let records = Dictionary(
            delegate.messages.map { (KafkaPosition(partition: $0.partition, offset: $0.offset), $0.text) },
            uniquingKeysWith: { first, _ in first })
        let texts = Array(records.values)
        #expect(texts.count == 60)
        #expect(Set(texts).count == 60)
        #expect(Set(texts) == Set((0..<20).map { "before-\($0)" } + (0..<30).map { "during-\($0)" }
            + (0..<10).map { "after-\($0)" }))
    }

    @Test("a full local queue is a distinct, retriable error; queued messages are delivered once the broker is back")
    func queueFull() async throws {
        let topic = uniqueName("full")
        let cluster = try EmbeddedKafkaCluster(brokers: 1, topics: [(topic, 1)], logger: quietLogger)
        defer { cluster.close() }
        cluster.setBrokerDown(1)
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers, ["queue.buffering.max.messages": "10"]),
            logger: quietLogger)
        defer { producer.close(timeout: .seconds(5)) }
        let outcomes = Collected<Delivery>()
        for index in 0..<10 {
            try producer.send(topic: topic, key: nil, value: Array("m\(index)".utf8)) { outcomes.append($0) }
        }
        let error = try #require(throws: KafkaError.self) {
            try producer.send(topic: topic, key: nil, value: Array("one too many".utf8)) { outcomes.append($0) }
        }
        #expect(error.isQueueFull)
        #expect(error.isRetriable)
        #expect(producer.outstandingMessages >= 10)  // plus librdkafka events (broker down) not yet served

        cluster.setBrokerUp(1)
        #expect(producer.flush(timeout: .seconds(20)))
        #expect(outcomes.count == 10)  // the refused message never gets a completion
        #expect(outcomes.values.allSatisfy { (try? $0.get()) != nil })
        #expect(producer.outstandingMessages == 0)
    }

    @Test("round-trip time injected on the broker delays acknowledgements")
    func roundTripTime() async throws {
        let topic = uniqueName("rtt")
        let cluster = try EmbeddedKafkaCluster(brokers: 1, topics: [(topic, 1)], logger: quietLogger)
        defer { cluster.close() }
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        defer { producer.close(timeout: .seconds(5)) }
        _ = try await producer.send(topic: topic, key: nil, value: [1])  // connected, producer id assigned
        cluster.setRoundTripTime(1, milliseconds: 400)
        let start = ContinuousClock.now
        _ = try await producer.send(topic: topic, key: nil, value: [2])
        #expect(ContinuousClock.now - start >= .milliseconds(350))
    }

    @Test("closing a producer that cannot deliver fails its messages (each completion once) within the deadline")
    func producerCloseFailsUndeliverable() async throws {
        let topic = uniqueName("undeliverable")
        let cluster = try EmbeddedKafkaCluster(brokers: 1, topics: [(topic, 1)], logger: quietLogger)
        defer { cluster.close() }
        cluster.setBrokerDown(1)
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        let outcomes = Collected<Delivery>()
        for index in 0..<5 {
            try producer.send(topic: topic, key: nil, value: [UInt8(index)]) { outcomes.append($0) }
        }
        let start = ContinuousClock.now
        producer.close(timeout: .milliseconds(500))
        #expect(ContinuousClock.now - start < .seconds(5))
        #expect(outcomes.count == 5)
        for outcome in outcomes.values {
            guard case .failure(let error) = outcome else {
                Issue.record("a message was acknowledged by a broker that is down")
                continue
            }
            #expect([KafkaErrorCode.purgedQueue, KafkaErrorCode.purgedInFlight].contains(error.code))
        }
        // Closed: later sends are refused synchronously, close again is a no-op.
        #expect(throws: KafkaError.self) { try producer.send(topic: topic, key: nil, value: [9]) { _ in } }
        producer.close(timeout: .seconds(1))
    }

    @Test("a completion may close its own producer; the queue metric is exported")
    func closeFromCompletion() async throws {
        let topic = uniqueName("self-close")
        let cluster = try EmbeddedKafkaCluster(brokers: 1, topics: [(topic, 1)], logger: quietLogger)
        defer { cluster.close() }
        let metrics = MetricsRegistry()
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger, metrics: metrics)
        #expect(metrics.render().contains("kafka_producer_queue_messages 0"))
        let outcomes = Collected<Delivery>()
        try producer.send(topic: topic, key: nil, value: [1]) { result in
            outcomes.append(result)
            producer.close(timeout: .seconds(5))
        }
        try producer.send(topic: topic, key: nil, value: [2]) { outcomes.append($0) }
        #expect(await eventually(timeout: .seconds(10)) { outcomes.count == 2 })
        #expect(await eventually(timeout: .seconds(10)) {
            (try? producer.send(topic: topic, key: nil, value: [3]) { _ in }) == nil
        })
    }

    @Test("closing a consumer whose broker is gone returns within its timeout")
    func consumerCloseIsBounded() async throws {
        let topic = uniqueName("gone")
        let cluster = try EmbeddedKafkaCluster(brokers: 1, topics: [(topic, 1)], logger: quietLogger)
        defer { cluster.close() }
        let delegate = RecordingDelegate()
        let consumer = try KafkaConsumer(
            configuration: consumerConfiguration(cluster.bootstrapServers), groupId: uniqueName("group"),
            topics: [topic], delegate: delegate, logger: quietLogger)
        consumer.start()
        try #require(await eventually { delegate.assigned.count == 1 })
        cluster.setBrokerDown(1)
        let start = ContinuousClock.now
        consumer.close(timeout: .seconds(2))
        #expect(ContinuousClock.now - start < .seconds(4))
        // The delegate heard the revoke of its partition on the way out.
        #expect(await eventually(timeout: .seconds(5)) { delegate.events.last?.kind == .revoking })
        #expect(throws: KafkaError.self) {
            try consumer.storeOffset(TopicPartition(topic: topic, partition: 0), nextOffset: 1)
        }
        cluster.setBrokerUp(1)
    }

    @Test("a consumer closed before it was started releases everything")
    func closeWithoutStart() throws {
        let consumer = try KafkaConsumer(
            configuration: consumerConfiguration("127.0.0.1:1"), groupId: "never", topics: ["t"],
            delegate: RecordingDelegate(), logger: quietLogger)
        consumer.close(timeout: .seconds(2))
        consumer.start()  // after close: nothing happens
        #expect(consumer.assignment.isEmpty)
    }
}

/// A record's place in its topic.
private struct KafkaPosition: Hashable {
    let partition: Int32
    let offset: Int64
}
