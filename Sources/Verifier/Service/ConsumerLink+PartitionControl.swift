import Kafka
import ServiceRuntime

/// The engine's pause/resume/store/commit actions go straight to the consumer the link is attached to (any thread);
/// before it is attached (never, in practice: the consumer starts after) they do nothing.
extension ConsumerLink: PartitionControl {
    func pause(_ partitions: [TopicPartition]) {
        consumer?.pause(partitions)
    }

    func resume(_ partitions: [TopicPartition]) {
        consumer?.resume(partitions)
    }

    func storeOffset(_ partition: TopicPartition, nextOffset: Int64) throws {
        try consumer?.storeOffset(partition, nextOffset: nextOffset)
    }

    func requestCommit() {
        consumer?.requestCommit()
    }
}
