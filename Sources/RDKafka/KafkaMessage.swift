/// A consumed record, copied out of librdkafka (it owns no C memory).
public struct KafkaMessage: Sendable, Equatable {
    public let topic: String
    public let partition: Int32
    public let offset: Int64
    /// nil when the record has no key (distinct from an empty key).
    public let key: [UInt8]?
    public let value: [UInt8]
    public let headers: [KafkaHeader]
    /// The record's timestamp (create or log-append time, per the topic), when it has one.
    public let timestampMs: Int64?

    public init(
        topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader] = [],
        timestampMs: Int64? = nil
    ) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestampMs = timestampMs
    }

    public var topicPartition: TopicPartition { TopicPartition(topic: topic, partition: partition) }
}
