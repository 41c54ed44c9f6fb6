import Foundation
import Kafka
import ServiceSupport
import Synchronization
import Testing
import TestSupport

/// Producer, consumer group and follower against a cluster running in a separate `embedded-kafka` process, so the
/// Kafka protocol between processes is real.
@Suite("Kafka against an embedded-kafka process", .serialized)
struct KafkaClusterTests {
    @Test("produce and consume round trip keeps keys, values and headers; the cluster process exits 0")
    func roundTrip() async throws {
        let topic = uniqueName("roundtrip")
        let cluster = try await EmbeddedKafkaProcess.start(topics: [(topic, 2)])
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        let headers = [
            KafkaHeader(name: "submission_id", string: "sub-1"), KafkaHeader(name: "empty", value: []),
            KafkaHeader(name: "absent", value: nil),
        ]
        let keyed = try await producer.send(
            topic: topic, key: Array("user-1".utf8), value: Array("{\"a\":1}".utf8), headers: headers)
        let bare = try await producer.send(topic: topic, key: nil, value: [])
        let emptyKey = try await producer.send(topic: topic, key: [], value: Array("x".utf8))
        #expect(keyed.topic == topic)
        #expect(keyed.offset >= 0)

        let delegate = RecordingDelegate()
        let consumer = try KafkaConsumer(
            configuration: consumerConfiguration(cluster.bootstrapServers), groupId: uniqueName("group"),
            topics: [topic], delegate: delegate, logger: quietLogger)
        consumer.start()
        #expect(await eventually { delegate.messages.count >= 3 })
        consumer.close(timeout: .seconds(10))
        producer.close(timeout: .seconds(5))

        let messages = delegate.messages
        #expect(messages.count == 3)
        let first = try #require(messages.first { $0.topicPartition == keyed.topicPartition && $0.offset == keyed.offset })
        #expect(first.key == Array("user-1".utf8))
        #expect(first.text == "{\"a\":1}")
        #expect(first.headers == headers)
        #expect(first.timestampMs.map { abs($0 - SystemTime.wallMilliseconds()) < 60_000 } == true)
        let second = try #require(messages.first { $0.topicPartition == bare.topicPartition && $0.offset == bare.offset })
        #expect(second.key == nil)
        #expect(second.value.isEmpty)
        #expect(second.headers.isEmpty)
        let third = try #require(
            messages.first { $0.topicPartition == emptyKey.topicPartition && $0.offset == emptyKey.offset })
        #expect(third.key == [])
        #expect(delegate.errors.filter(\.isFatal).isEmpty)
        #expect(await cluster.stop() == 0)
    }

    @Test("a consumer group splits the partitions between two consumers; each message is consumed once")
    func groupSplit() async throws {
        let topic = uniqueName("split")
        let group = uniqueName("group")
        let cluster = try await EmbeddedKafkaProcess.start(topics: [(topic, 4)])
        let delegates = [RecordingDelegate(), RecordingDelegate()]
        let consumers = try delegates.map { delegate in
            try KafkaConsumer(
                configuration: consumerConfiguration(cluster.bootstrapServers), groupId: group, topics: [topic],
                delegate: delegate, logger: quietLogger)
        }
        consumers.forEach { $0.start() }
        defer { consumers.forEach { $0.close(timeout: .seconds(10)) } }
        // Stable split: both own partitions, together all four, none twice.
        let split = await eventually(timeout: .seconds(30)) {
            let (a, b) = (delegates[0].assigned, delegates[1].assigned)
            return !a.isEmpty && !b.isEmpty && a.isDisjoint(with: b) && a.union(b).count == 4
        }
        try #require(split, "assignments: \(delegates[0].assigned) / \(delegates[1].assigned)")

        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        defer { producer.close(timeout: .seconds(5)) }
        let reports = try await produceNumbered(producer, topic: topic, count: 80)
        #expect(Set(reports.map(\.partition)).count == 4)

        #expect(await eventually { delegates[0].messages.count + delegates[1].messages.count >= 80 })
        try await Task.sleep(for: .milliseconds(300))  // anything extra (a duplicate) would arrive now
        let all = delegates[0].messages + delegates[1].messages
        #expect(all.count == 80)
        #expect(Set(all.map(\.text)).count == 80)
        for delegate in delegates {
            let owned = delegate.assigned
            #expect(!delegate.messages.isEmpty)
            #expect(delegate.messages.allSatisfy { owned.contains($0.topicPartition) })
        }
    }

    @Test("offsets stored by one consumer are where the next consumer of the group resumes")
    func resumeFromStoredOffset() async throws {
        let topic = uniqueName("resume")
        let group = uniqueName("group")
        let cluster = try await EmbeddedKafkaProcess.start(topics: [(topic, 1)])
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        defer { producer.close(timeout: .seconds(5)) }
        _ = try await produceNumbered(producer, topic: topic, count: 10)

        // The first consumer processes messages 0...5 and stores 6 (the next offset to read).
        let partition = TopicPartition(topic: topic, partition: 0)
        let first = RecordingDelegate(onMessage: { consumer, message in
            if message.offset == 5 { try? consumer.storeOffset(partition, nextOffset: 6) }
        })
        let metrics = MetricsRegistry()
        let firstConsumer = try KafkaConsumer(
            configuration: consumerConfiguration(cluster.bootstrapServers), groupId: group, topics: [topic],
            delegate: first, logger: quietLogger, metrics: metrics)
        firstConsumer.start()
        #expect(await eventually { first.messages.count == 10 })
        // Committed 6 of 10 (auto commit), seen by the next statistics: lag 4, exported for Prometheus.
        let lagLine = "kafka_consumer_lag{topic=\"\(topic)\",partition=\"0\"} 4"
        #expect(await eventually(timeout: .seconds(10)) { metrics.render().contains(lagLine) })
        #expect(firstConsumer.lagByPartition == [partition: 4])
        #expect(metrics.render().contains("kafka_rebalances_total 1"))
        #expect(metrics.render().contains("kafka_consumer_assigned_partitions 1"))
        firstConsumer.close(timeout: .seconds(10))

        let second = RecordingDelegate()
        let secondConsumer = try KafkaConsumer(
            configuration: consumerConfiguration(cluster.bootstrapServers), groupId: group, topics: [topic],
            delegate: second, logger: quietLogger)
        secondConsumer.start()
        defer { secondConsumer.close(timeout: .seconds(10)) }
        #expect(await eventually { second.messages.count >= 4 })
        #expect(second.messages.map(\.offset) == [6, 7, 8, 9])
    }

    @Test("out-of-order completion stores only the contiguous completed prefix; pause and resume")
    func outOfOrderCompletion() async throws {
        let topic = uniqueName("ooo")
        let group = uniqueName("group")
        let cluster = try await EmbeddedKafkaProcess.start(topics: [(topic, 1)])
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        defer { producer.close(timeout: .seconds(5)) }
        _ = try await produceNumbered(producer, topic: topic, count: 10)

        let partition = TopicPartition(topic: topic, partition: 0)
        let tracker = Locked(PartitionOffsetTracker())
        let delegate = RecordingDelegate(onMessage: { _, message in tracker.withLock { _ = $0.track(message.offset) } })
        let consumer = try KafkaConsumer(
            configuration: consumerConfiguration(cluster.bootstrapServers), groupId: group, topics: [topic],
            delegate: delegate, logger: quietLogger)
        consumer.start()
        #expect(await eventually { delegate.messages.count == 10 })
        // Finish 1, 2, 3 and 5...9 before 0, and never 4: the stored offset may only reach 4.
        var stored: [Int64] = []
        for offset: Int64 in [1, 2, 3, 5, 6, 7, 8, 9, 0] {
            if let next = tracker.withLock({ $0.complete(offset) }) {
                try consumer.storeOffset(partition, nextOffset: next)
                stored.append(next)
            }
        }
        #expect(stored == [4])
        try consumer.commitStoredOffsets()
        consumer.close(timeout: .seconds(10))

        let resumed = RecordingDelegate()
        let next = try KafkaConsumer(
            configuration: consumerConfiguration(cluster.bootstrapServers), groupId: group, topics: [topic],
            delegate: resumed, logger: quietLogger)
        next.start()
        defer { next.close(timeout: .seconds(10)) }
        #expect(await eventually { resumed.messages.count >= 6 })
        #expect(resumed.messages.first?.offset == 4)

        // Paused, the partition hands out nothing new; resumed, what was written meanwhile arrives.
        next.pause([partition])
        try await Task.sleep(for: .milliseconds(200))
        _ = try await produceNumbered(producer, topic: topic, count: 3, prefix: "while-paused")
        try await Task.sleep(for: .milliseconds(1000))
        #expect(resumed.messages.count == 6)
        next.resume([partition])
        #expect(await eventually { resumed.messages.count == 9 })
        #expect(resumed.messages.map(\.offset) == Array(4...12))
    }

    @Test("a held intake joins the group, hands out at most one message per held poll, and everything once released")
    func heldIntake() async throws {
        let topic = uniqueName("held")
        let cluster = try await EmbeddedKafkaProcess.start(topics: [(topic, 1)])
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        defer { producer.close(timeout: .seconds(5)) }
        _ = try await produceNumbered(producer, topic: topic, count: 200)
        let delegate = RecordingDelegate()
        let consumer = try KafkaConsumer(
            configuration: consumerConfiguration(cluster.bootstrapServers), groupId: uniqueName("group"),
            topics: [topic], delegate: delegate, logger: quietLogger)
        defer { consumer.close(timeout: .seconds(10)) }
        consumer.holdIntake(true)
        #expect(consumer.isIntakeHeld)
        let clock = ContinuousClock()
        let started = clock.now
        consumer.start()
        // Rebalances are still served: the partition is assigned while the intake is held.
        #expect(await eventually { !delegate.assigned.isEmpty })
        try await Task.sleep(for: .milliseconds(500))
        let delivered = delegate.messages.count
        let held = clock.now - started
        // One poll per held interval at most (the first poll does not wait), whatever the machine's speed.
        #expect(delivered <= Int(held / KafkaConsumer.heldPollInterval) + 1)
        #expect(delivered < 200)
        consumer.holdIntake(false)
        #expect(!consumer.isIntakeHeld)
        #expect(await eventually { delegate.messages.count == 200 })
        #expect(delegate.messages.map(\.offset) == Array(0..<200))
    }

    @Test("willRevoke reaches the delegate while the partitions are still assigned; storing after it is refused")
    func revokeBeforeUnassign() async throws {
        let topic = uniqueName("revoke")
        let group = uniqueName("group")
        let cluster = try await EmbeddedKafkaProcess.start(topics: [(topic, 2)])
        struct Observation: Sendable {
            let revoking: Set<TopicPartition>
            let assignmentDuringRevoke: Set<TopicPartition>
            let storesSucceeded: [Bool]
        }
        let observed = Collected<Observation>()
        let firstDelegate = RecordingDelegate(onRevoke: { consumer, partitions in
            let assignment = consumer.assignment
            let stores = partitions.map { (try? consumer.storeOffset($0, nextOffset: 0)) != nil }
            observed.append(
                Observation(revoking: Set(partitions), assignmentDuringRevoke: Set(assignment), storesSucceeded: stores))
        })
        let first = try KafkaConsumer(
            configuration: consumerConfiguration(cluster.bootstrapServers), groupId: group, topics: [topic],
            delegate: firstDelegate, logger: quietLogger)
        first.start()
        defer { first.close(timeout: .seconds(10)) }
        try #require(await eventually(timeout: .seconds(20)) { firstDelegate.assigned.count == 2 })

        // A second member makes the group rebalance: the first hears willRevoke for both partitions.
        let secondDelegate = RecordingDelegate()
        let second = try KafkaConsumer(
            configuration: consumerConfiguration(cluster.bootstrapServers), groupId: group, topics: [topic],
            delegate: secondDelegate, logger: quietLogger)
        second.start()
        defer { second.close(timeout: .seconds(10)) }
        try #require(await eventually(timeout: .seconds(30)) { !secondDelegate.assigned.isEmpty })

        let revoking = try #require(firstDelegate.events.first { $0.kind == .revoking })
        #expect(Set(revoking.partitions).count == 2)
        // Every revoke (the mock may rebalance more than once) saw its partitions still assigned and storable.
        let observations = observed.values
        #expect(!observations.isEmpty)
        for observation in observations {
            #expect(observation.assignmentDuringRevoke == observation.revoking)
            #expect(observation.storesSucceeded.allSatisfy { $0 })
        }
        // After the rebalance the first consumer owns one partition; the other one is refused.
        let lost = try #require(secondDelegate.assigned.first)
        #expect(throws: KafkaError.self) { try first.storeOffset(lost, nextOffset: 0) }
        #expect(first.rebalanceCount >= 3)
    }

    @Test("a topic follower reads every partition from the beginning, or from the end")
    func follower() async throws {
        let topic = uniqueName("follow")
        let cluster = try await EmbeddedKafkaProcess.start(topics: [(topic, 3)])
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        defer { producer.close(timeout: .seconds(5)) }
        _ = try await produceNumbered(producer, topic: topic, count: 6, prefix: "early")

        let fromBeginning = Collected<String>()
        let fromEnd = Collected<String>()
        let configuration = KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers])
        let starts: [(Int64?, Collected<String>)] = [(0, fromBeginning), (nil, fromEnd)]
        let followers = try starts.map { start, sink in
            try KafkaTopicFollower(
                configuration: configuration, topic: topic, startingAtTimestampMs: start, logger: quietLogger
            ) { message in sink.append(message.text) }
        }
        followers.forEach { $0.start() }
        defer { followers.forEach { $0.close(timeout: .seconds(5)) } }
        try #require(await eventually { followers.allSatisfy { $0.partitions == [0, 1, 2] } })
        _ = try await produceNumbered(producer, topic: topic, count: 6, prefix: "late")

        #expect(await eventually { fromBeginning.count >= 12 && fromEnd.count >= 6 })
        try await Task.sleep(for: .milliseconds(300))
        #expect(fromBeginning.values.sorted() == ((0..<6).map { "early-\($0)" } + (0..<6).map { "late-\($0)" }).sorted())
        #expect(fromEnd.values.sorted() == (0..<6).map { "late-\($0)" }.sorted())
    }

    // On the mock cluster a metadata lookup of an unknown topic creates it (4 partitions) whatever
    // allow.auto.create.topics says, so this exercises "topic empty at start" rather than "topic absent at start".
    @Test("a topic follower started before anything was written to its topic reads everything written after")
    func followerFindsLateTopic() async throws {
        let topic = uniqueName("late-topic")
        let cluster = try await EmbeddedKafkaProcess.start()
        let received = Collected<String>()
        let follower = try KafkaTopicFollower(
            configuration: KafkaConfiguration(["bootstrap.servers": cluster.bootstrapServers]), topic: topic,
            startingAtTimestampMs: nil, logger: quietLogger, refreshInterval: .milliseconds(200)
        ) { message in received.append(message.text) }
        follower.start()
        defer { follower.close(timeout: .seconds(5)) }
        // Positioned at the end of every partition before anything is produced (the mock makes 4).
        #expect(await eventually(timeout: .seconds(10)) { follower.partitions.count == 4 })
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        defer { producer.close(timeout: .seconds(5)) }
        _ = try await produceNumbered(producer, topic: topic, count: 8, prefix: "new")
        #expect(await eventually { received.count >= 8 })
        #expect(received.values.sorted() == (0..<8).map { "new-\($0)" }.sorted())
    }

    @Test("an invalid Kafka property stops a tool at start with an error naming the property")
    func invalidPropertyAtStartup() async throws {
        let tail = try ManagedProcess(
            executable: try TestBinaries.path("receipt-tail"),
            environment: ["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "KAFKA_ACKS_PLEASE": "1"])
        #expect(await tail.waitForExit(timeout: .seconds(10)) == 1)
        #expect(tail.stderrLines.contains { $0.contains("acks.please") && $0.contains("KAFKA_ACKS_PLEASE") })

        let cluster = try ManagedProcess(executable: try TestBinaries.path("embedded-kafka"), arguments: ["--brokers", "0"])
        #expect(await cluster.waitForExit(timeout: .seconds(10)) == 2)
    }

    @Test("receipt-tail prints each result on its own line and exits 0 on SIGTERM")
    func receiptTail() async throws {
        let topic = uniqueName("results")
        let cluster = try await EmbeddedKafkaProcess.start(topics: [(topic, 2)])
        let producer = try KafkaProducer(
            configuration: producerConfiguration(cluster.bootstrapServers), logger: quietLogger)
        defer { producer.close(timeout: .seconds(5)) }
        let result = #"{"schema_version":1,"submission_id":"s-1","outcome":"verified"}"#
        _ = try await producer.send(topic: topic, key: Array("s-1".utf8), value: Array(result.utf8))

        let tail = try ManagedProcess(
            executable: try TestBinaries.path("receipt-tail"), arguments: ["--from-beginning"],
            environment: cluster.environment.merging(["RESULTS_TOPIC": topic, "LOG_LEVEL": "warning"]) { $1 })
        let line = try await tail.waitForStdoutLine { $0.contains("s-1") }
        #expect(line == result)
        #expect(await tail.terminate(grace: .seconds(10)) == 0)
    }
}
