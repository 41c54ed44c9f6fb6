/// What a `KafkaConsumer`'s owner is told. Every method runs on the consumer's poll thread (one at a time, in
/// order): return quickly from `didReceive` (hand the work to a queue); nothing else is fetched meanwhile.
public protocol KafkaConsumerDelegate: AnyObject, Sendable {
    /// A message of an assigned partition, in offset order per partition.
    func consumer(_ consumer: KafkaConsumer, didReceive message: KafkaMessage)

    /// Partitions were assigned; messages of these partitions follow, from the group's committed offsets (or
    /// `auto.offset.reset` when there are none).
    func consumer(_ consumer: KafkaConsumer, didAssign partitions: [TopicPartition])

    /// Called from the rebalance callback *before* the partitions are unassigned (eager protocol: on every rebalance
    /// all current partitions are revoked, then the new assignment arrives). The delegate may block here for a
    /// bounded time to let in-flight work finish and store its offsets (`storeOffset` still works during this
    /// call); offsets stored after return are refused. Also called by `close`.
    func consumer(_ consumer: KafkaConsumer, willRevoke partitions: [TopicPartition])

    /// An error librdkafka reported. Most are transient (`isRetriable`; librdkafka reconnects and retries by itself);
    /// an `isFatal` one means the consumer can no longer work and should be closed and recreated.
    func consumer(_ consumer: KafkaConsumer, didFail error: KafkaError)
}
