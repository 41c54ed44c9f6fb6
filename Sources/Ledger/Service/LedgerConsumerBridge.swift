import Kafka
import ServiceSupport
import Synchronization

/// The consumer's delegate: copies each message into the buffer, pauses fetching while the buffer is over its high
/// water mark, and forgets buffered messages of revoked partitions (their next owner starts from the offsets in
/// the database, as this instance does on assignment).
final class LedgerConsumerBridge: KafkaConsumerDelegate {
    private let buffer: RecordBuffer
    private let logger: Logger
    private let paused = Atomic<Bool>(false)
    let fatalError = Locked<String?>(nil)

    init(buffer: RecordBuffer, logger: Logger) {
        self.buffer = buffer
        self.logger = logger
    }

    func consumer(_ consumer: KafkaConsumer, didReceive message: KafkaMessage) {
        buffer.append(
            LedgerRecord(
                topic: message.topic, partition: message.partition, offset: message.offset, value: message.value,
                timestampMs: message.timestampMs))
        if buffer.isOverHighWater, !paused.exchange(true, ordering: .relaxed) {
            consumer.pause(consumer.assignment)
            logger.debug("fetching paused: the buffer is full", ["buffered": .int(buffer.count)])
        }
    }

    func consumer(_ consumer: KafkaConsumer, didAssign partitions: [TopicPartition]) {
        // A pause does not survive a rebalance.
        if paused.load(ordering: .relaxed) { consumer.pause(partitions) }
    }

    func consumer(_ consumer: KafkaConsumer, willRevoke partitions: [TopicPartition]) {
        buffer.drop(Set(partitions.map { PartitionKey(topic: $0.topic, partition: $0.partition) }))
    }

    func consumer(_ consumer: KafkaConsumer, didFail error: KafkaError) {
        if error.isFatal { fatalError.withLock { $0 = error.message } }
    }

    /// Resumes fetching once the worker has drained the buffer to its low water mark.
    func resumeIfDrained(_ consumer: KafkaConsumer) {
        guard buffer.isUnderLowWater, paused.exchange(false, ordering: .relaxed) else { return }
        consumer.resume(consumer.assignment)
    }
}
