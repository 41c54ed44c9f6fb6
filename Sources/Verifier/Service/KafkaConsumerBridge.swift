import Kafka
import ServiceSupport
import Synchronization

/// Connects the Kafka consumer and the engine both ways: consumer events go to the engine (as its delegate), the
/// engine's pause/resume/store/commit actions go to the consumer (as its `PartitionControl`).
///
/// Both ends are attached after construction (each needs the other to be created); events arriving before the
/// engine is attached cannot happen because the consumer is started only after `attach(engine:)`.
final class KafkaConsumerBridge: KafkaConsumerDelegate, PartitionControl {
    private let engine = Locked<VerificationEngine?>(nil)
    private let consumer = Locked<KafkaConsumer?>(nil)
    private let revokeTimeout: Duration
    private let logger: Logger
    /// Set when librdkafka reported a fatal error: the process is no longer healthy and should be restarted.
    let fatalError = Locked<String?>(nil)

    init(revokeTimeout: Duration, logger: Logger) {
        self.revokeTimeout = revokeTimeout
        self.logger = logger
    }

    func attach(engine: VerificationEngine) { self.engine.withLock { $0 = engine } }
    func attach(consumer: KafkaConsumer) { self.consumer.withLock { $0 = consumer } }

    private var currentEngine: VerificationEngine? { engine.withLock { $0 } }
    private var currentConsumer: KafkaConsumer? { consumer.withLock { $0 } }

    // MARK: KafkaConsumerDelegate (poll thread)

    func consumer(_ consumer: KafkaConsumer, didReceive message: KafkaMessage) {
        currentEngine?.consume(
            InputMessage(
                partition: message.topicPartition, offset: message.offset,
                key: message.key, value: message.value))
    }

    func consumer(_ consumer: KafkaConsumer, didAssign partitions: [TopicPartition]) {
        currentEngine?.partitionsAssigned(partitions)
    }

    func consumer(_ consumer: KafkaConsumer, willRevoke partitions: [TopicPartition]) {
        currentEngine?.partitionsRevoking(partitions, timeout: revokeTimeout)
    }

    func consumer(_ consumer: KafkaConsumer, didFail error: KafkaError) {
        if error.isFatal {
            fatalError.withLock { $0 = error.message }
            logger.error("fatal Kafka consumer error: restart the verifier", ["error": .string(error.message)])
        } else {
            logger.warning("Kafka consumer error", ["error": .string(error.message), "code": .int(Int(error.code))])
        }
    }

    // MARK: PartitionControl (any thread)

    func pause(_ partitions: [PartitionKey]) {
        currentConsumer?.pause(partitions)
    }

    func resume(_ partitions: [PartitionKey]) {
        currentConsumer?.resume(partitions)
    }

    func storeOffset(_ partition: PartitionKey, nextOffset: Int64) throws {
        guard let consumer = currentConsumer else { return }
        try consumer.storeOffset(partition, nextOffset: nextOffset)
    }

    func requestCommit() {
        currentConsumer?.requestCommit()
    }
}
