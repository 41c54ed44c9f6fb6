import Kafka
import ReceiptModel
import ServiceSupport
import Synchronization
import Testing
import TestSupport

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

    /// Records the topic holds now by its offsets (every partition's high minus low watermark), once the follower
    /// knows its partitions: what every writer acknowledged so far, whether or not it was read yet.
    func recordsWritten(timeout: Duration = .seconds(15)) async throws -> Int64 {
        let started = await eventually(timeout: timeout) { follower.isCaughtUp && !follower.partitions.isEmpty }
        try #require(started, "the collector of \(follower.topic) found no partitions")
        return try follower.watermarks().values.reduce(0) { $0 + $1.high - $1.low }
    }

    /// A positive marker that `messages` is complete up to now: waits until the collector holds as many records as
    /// the topic's offsets say were written before this call. False when it does not within `timeout`.
    func readEverythingWrittenSoFar(timeout: Duration = .seconds(15)) async throws -> Bool {
        let written = try await recordsWritten(timeout: timeout)
        return await eventually(timeout: timeout) { Int64(received.messages.withLock { $0.count }) >= written }
    }

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
