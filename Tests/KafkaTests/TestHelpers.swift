import Foundation
import Kafka
import ServiceSupport
import Synchronization
import TestSupport

/// Logs only errors, so test output stays readable (set KAFKA_TEST_LOG_LEVEL=debug to see everything).
let quietLogger = Logger(
    label: "kafka-tests",
    threshold: ProcessInfo.processInfo.environment["KAFKA_TEST_LOG_LEVEL"].flatMap(LogLevel.init(name:)) ?? .error)

/// A name no other test uses (topics and groups live as long as the cluster).
func uniqueName(_ prefix: String) -> String {
    "\(prefix)-\(UInt32.random(in: 0...UInt32.max))"
}

/// Consumer settings that keep group rebalances on the mock cluster short.
func consumerConfiguration(_ bootstrap: String, _ extra: [String: String] = [:]) -> KafkaConfiguration {
    var configuration = KafkaConfiguration([
        "bootstrap.servers": bootstrap, "session.timeout.ms": "3000", "heartbeat.interval.ms": "300",
        "topic.metadata.refresh.interval.ms": "1000", "statistics.interval.ms": "500",
    ])
    for (name, value) in extra { configuration[name] = value }
    return configuration
}

func producerConfiguration(_ bootstrap: String, _ extra: [String: String] = [:]) -> KafkaConfiguration {
    var configuration = KafkaConfiguration(["bootstrap.servers": bootstrap])
    for (name, value) in extra { configuration[name] = value }
    return configuration
}

/// Records everything a consumer tells its delegate; optional hooks run inside the callbacks.
final class RecordingDelegate: KafkaConsumerDelegate {
    struct Event: Sendable, Equatable {
        enum Kind: Sendable, Equatable { case assigned, revoking }
        let kind: Kind
        let partitions: [TopicPartition]
    }

    private let state = Locked(State())
    private struct State {
        var messages: [KafkaMessage] = []
        var events: [Event] = []
        var errors: [KafkaError] = []
    }
    let onMessage: (@Sendable (KafkaConsumer, KafkaMessage) -> Void)?
    let onRevoke: (@Sendable (KafkaConsumer, [TopicPartition]) -> Void)?

    init(
        onMessage: (@Sendable (KafkaConsumer, KafkaMessage) -> Void)? = nil,
        onRevoke: (@Sendable (KafkaConsumer, [TopicPartition]) -> Void)? = nil
    ) {
        self.onMessage = onMessage
        self.onRevoke = onRevoke
    }

    var messages: [KafkaMessage] { state.withLock { $0.messages } }
    var events: [Event] { state.withLock { $0.events } }
    var errors: [KafkaError] { state.withLock { $0.errors } }
    /// Partitions currently assigned according to the callbacks.
    var assigned: Set<TopicPartition> {
        state.withLock { state in
            var current = Set<TopicPartition>()
            for event in state.events {
                if event.kind == .assigned {
                    current.formUnion(event.partitions)
                } else {
                    current.subtract(event.partitions)
                }
            }
            return current
        }
    }

    func consumer(_ consumer: KafkaConsumer, didReceive message: KafkaMessage) {
        state.withLock { $0.messages.append(message) }
        onMessage?(consumer, message)
    }

    func consumer(_ consumer: KafkaConsumer, didAssign partitions: [TopicPartition]) {
        state.withLock { $0.events.append(Event(kind: .assigned, partitions: partitions.sorted())) }
    }

    func consumer(_ consumer: KafkaConsumer, willRevoke partitions: [TopicPartition]) {
        onRevoke?(consumer, partitions)
        state.withLock { $0.events.append(Event(kind: .revoking, partitions: partitions.sorted())) }
    }

    func consumer(_ consumer: KafkaConsumer, didFail error: KafkaError) {
        state.withLock { $0.errors.append(error) }
    }
}

/// Produces `count` messages with values `"<prefix>-<i>"` and keys `"k<i>"`, waiting for every acknowledgement.
func produceNumbered(_ producer: KafkaProducer, topic: String, count: Int, prefix: String = "m") async throws
    -> [KafkaDeliveryReport]
{
    try await withThrowingTaskGroup(of: KafkaDeliveryReport.self) { group in
        for index in 0..<count {
            group.addTask {
                try await producer.send(
                    topic: topic, key: Array("k\(index)".utf8), value: Array("\(prefix)-\(index)".utf8))
            }
        }
        var reports: [KafkaDeliveryReport] = []
        for try await report in group { reports.append(report) }
        return reports
    }
}

extension KafkaMessage {
    var text: String { String(decoding: value, as: UTF8.self) }
}

/// A thread-safe list that callbacks append to.
final class Collected<Element: Sendable>: Sendable {
    private let items = Locked<[Element]>([])
    func append(_ item: Element) { items.withLock { $0.append(item) } }
    var values: [Element] { items.withLock { $0 } }
    var count: Int { items.withLock { $0.count } }
}
