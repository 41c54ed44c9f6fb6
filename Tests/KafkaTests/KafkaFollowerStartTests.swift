import Foundation
import Kafka
import ServiceSupport
import Synchronization
import Testing
import TestSupport

/// `KafkaTopicFollower` starts and catching up against `embedded-kafka` (librdkafka's mock cluster in another
/// process, whose offsets-for-times lookup answers the end offset: the reason `FollowerStart.recent` exists).
@Suite("topic follower: recent start and catching up", .serialized)
struct KafkaFollowerStartTests {
    /// Produces `values` one by one (keys spread them over partitions) and returns where each landed.
    private func produce(_ producer: KafkaProducer, _ topic: String, _ values: [String]) async throws
        -> [(value: String, partition: Int32, offset: Int64)]
    {
        var placed: [(String, Int32, Int64)] = []
        for (index, value) in values.enumerated() {
            let report = try await producer.send(
                topic: topic, key: Array("key-\(index)".utf8), value: Array(value.utf8))
            placed.append((value, report.partition, report.offset))
        }
        return placed
    }

    private func follower(
        _ cluster: EmbeddedKafkaProcess, _ topic: String, _ start: FollowerStart, into sink: Collected<String>,
        caughtUpCalls: Collected<Int>? = nil
    ) throws -> KafkaTopicFollower {
        let follower = try KafkaTopicFollower(
            configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers]), topic: topic,
            start: start, logger: quietLogger, onCaughtUp: { caughtUpCalls?.append(1) }
        ) { message in sink.append(message.text) }
        follower.start()
        return follower
    }

    @Test("recent(messages:) reads each partition's share of the most recent messages, then is caught up")
    func recentByOffsets() async throws {
        let topic = uniqueName("recent")
        let cluster = try await EmbeddedKafkaProcess.start(topics: [(topic, 3)])
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        defer { producer.close(timeout: .seconds(5)) }
        let placed = try await produce(producer, topic, (0..<30).map { "m-\($0)" })
        // 6 messages over 3 partitions: the last 2 of each.
        let expected = Set(
            Dictionary(grouping: placed, by: \.partition).values.flatMap { messages in
                messages.sorted { $0.offset < $1.offset }.suffix(2).map(\.value)
            })
        let received = Collected<String>()
        let calls = Collected<Int>()
        let follower = try follower(
            cluster, topic, .recent(messages: 6, notBeforeMs: nil), into: received, caughtUpCalls: calls)
        defer { follower.close(timeout: .seconds(5)) }
        #expect(await eventually(timeout: .seconds(10)) { follower.isCaughtUp })
        // Caught up means the read-back is all in, at that very moment.
        #expect(Set(received.values) == expected)
        #expect(received.count == expected.count)
        #expect(calls.count == 1)
        // New messages keep coming after the read-back.
        _ = try await produce(producer, topic, ["late"])
        #expect(await eventually { received.values.contains("late") })
        #expect(follower.isCaughtUp)
    }

    @Test("recent(notBeforeMs:) skips read-back messages older than the time, but not newer ones")
    func recentByTime() async throws {
        let topic = uniqueName("recent-time")
        let cluster = try await EmbeddedKafkaProcess.start(topics: [(topic, 2)])
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        defer { producer.close(timeout: .seconds(5)) }
        _ = try await produce(producer, topic, (0..<10).map { "old-\($0)" })
        try await Task.sleep(for: .milliseconds(200))
        let cut = SystemTime.wallMilliseconds()
        try await Task.sleep(for: .milliseconds(50))
        _ = try await produce(producer, topic, (0..<10).map { "new-\($0)" })
        let received = Collected<String>()
        let follower = try follower(cluster, topic, .recent(messages: 1000, notBeforeMs: cut), into: received)
        defer { follower.close(timeout: .seconds(5)) }
        #expect(await eventually(timeout: .seconds(10)) { follower.isCaughtUp })
        #expect(Set(received.values) == Set((0..<10).map { "new-\($0)" }))
    }

    @Test("end: caught up at once without reading what was there; beginning: caught up after reading all of it")
    func endAndBeginning() async throws {
        let topic = uniqueName("ends")
        let cluster = try await EmbeddedKafkaProcess.start(topics: [(topic, 2)])
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        defer { producer.close(timeout: .seconds(5)) }
        _ = try await produce(producer, topic, (0..<8).map { "x-\($0)" })
        let fromEnd = Collected<String>()
        let fromBeginning = Collected<String>()
        let end = try follower(cluster, topic, .end, into: fromEnd)
        let beginning = try follower(cluster, topic, .beginning, into: fromBeginning)
        defer {
            end.close(timeout: .seconds(5))
            beginning.close(timeout: .seconds(5))
        }
        #expect(await eventually(timeout: .seconds(10)) { end.isCaughtUp && beginning.isCaughtUp })
        #expect(fromEnd.count == 0)
        #expect(fromBeginning.count == 8)
    }

    /// An empty partition has no message whose offset could reach its target, and librdkafka reports no position
    /// for it until it fetched: its start must be resolved from the watermarks (low = high) to count as read.
    @Test("beginning (timestamp 0): caught up with an empty partition beside a full one, and on an empty topic")
    func beginningWithEmptyPartitions() async throws {
        let topic = uniqueName("half-empty")
        let emptyTopic = uniqueName("empty")
        let cluster = try await EmbeddedKafkaProcess.start(topics: [(topic, 2), (emptyTopic, 2)])
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        defer { producer.close(timeout: .seconds(5)) }
        // One key: every message lands in the same partition and the other stays empty.
        var partitions: Set<Int32> = []
        for index in 0..<5 {
            let report = try await producer.send(topic: topic, key: Array("one-key".utf8), value: Array("v-\(index)".utf8))
            partitions.insert(report.partition)
        }
        #expect(partitions.count == 1)
        let received = Collected<String>()
        let nothing = Collected<String>()
        let halfEmpty = try KafkaTopicFollower(
            configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers]), topic: topic,
            startingAtTimestampMs: 0, logger: quietLogger
        ) { message in received.append(message.text) }
        let empty = try follower(cluster, emptyTopic, .beginning, into: nothing)
        halfEmpty.start()
        defer {
            halfEmpty.close(timeout: .seconds(5))
            empty.close(timeout: .seconds(5))
        }
        #expect(await eventually(timeout: .seconds(10)) { halfEmpty.isCaughtUp })
        #expect(received.values == (0..<5).map { "v-\($0)" }, "caught up means the full partition was read")
        #expect(await eventually(timeout: .seconds(10)) { empty.isCaughtUp })
        #expect(halfEmpty.partitions == [0, 1] && empty.partitions == [0, 1])
        #expect(nothing.count == 0)
    }
}
