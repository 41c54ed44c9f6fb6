import Kafka

/// A message consumed from `RECEIPTS_TOPIC` or `RETRY_TOPIC`, as the core sees it.
public struct InputMessage: Sendable {
    /// The largest message value the verifier reads (4 MiB): four times the ingest's default body limit and Kafka's
    /// default `max.message.bytes`, far above any real submission or notification (Apple's are a few KiB). A larger
    /// value is not parsed at all (JSON parsing costs time and memory in proportion to it: a 100 MB number would
    /// hold a worker for most of a minute) and becomes a `malformed_submission` DLQ record without the original bytes
    /// (copying them would cost as much again), pointing at it by source topic, partition and offset.
    public static let maximumValueBytes = 4 << 20

    public let partition: TopicPartition
    public let offset: Int64
    /// The message key; results, retry and DLQ records are keyed the same way.
    public let key: [UInt8]?
    public let value: [UInt8]

    public init(partition: TopicPartition, offset: Int64, key: [UInt8]?, value: [UInt8]) {
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
    }
}
