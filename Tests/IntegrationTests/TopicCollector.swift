import Kafka
import ReceiptModel
import ServiceSupport
import Synchronization

/// Reads a whole topic from the beginning into memory, in the test process, without joining a group.
final class TopicCollector: Sendable {
    private final class Store: Sendable {
        let messages = Locked<[KafkaMessage]>([])
    }

    private let follower: KafkaTopicFollower
    private let received = Store()

    init(bootstrapServers: String, topic: String) throws {
        let received = self.received
        follower = try KafkaTopicFollower(
            // The mock cluster holds every fetch for fetch.wait.max.ms: keep it short so messages arrive promptly.
            configuration: KafkaConfiguration(["bootstrap.servers": bootstrapServers, "fetch.wait.max.ms": "10"]),
            topic: topic,
            startingAtTimestampMs: 0, logger: Logger(label: "test-collector", threshold: .error),
            refreshInterval: .seconds(1)
        ) { message in
            received.messages.withLock { $0.append(message) }
        }
        follower.start()
    }

    var messages: [KafkaMessage] { received.messages.withLock { $0 } }

    func close() { follower.close(timeout: .seconds(5)) }
}

/// The results topic, decoded and grouped by submission.
extension TopicCollector {
    /// Every result message, decoded (a message that does not decode fails the calling test through `#require`).
    func results() throws -> [VerificationResult] {
        try messages.map { try MessageCoding.decode(VerificationResult.self, from: $0.value) }
    }

    func results(for submissionId: String) throws -> [VerificationResult] {
        try results().filter { $0.submissionId == submissionId }
    }

    /// Submission ids that have at least one result.
    func answeredIds() -> Set<String> {
        Set(messages.compactMap { try? MessageCoding.decode(VerificationResult.self, from: $0.value).submissionId })
    }
}
