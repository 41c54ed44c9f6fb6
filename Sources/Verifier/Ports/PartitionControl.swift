import Kafka

/// The consumer operations the dispatch state drives. Calls are quick and non-blocking.
protocol PartitionControl: Sendable {
    func pause(_ partitions: [TopicPartition])
    /// `wakingFetchers`: the consumer's fetchers may be idle (every partition was paused), so wake them.
    func resume(_ partitions: [TopicPartition], wakingFetchers: Bool)
    /// Holds back (true) or releases the messages already fetched, pausing nothing (`KafkaConsumer.holdIntake`).
    func holdIntake(_ held: Bool)
    /// Stores `nextOffset` (the next offset to read, as is) for the next commit.
    /// - Throws: when the partition is no longer assigned (harmless: the offset is simply not committed).
    func storeOffset(_ partition: TopicPartition, nextOffset: Int64) throws
    /// Asks for the stored offsets to be committed soon (paced: at most one commit per interval; never blocks).
    func requestCommit()
}
