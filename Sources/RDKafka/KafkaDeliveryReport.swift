/// Where a produced message was written: the broker acknowledged it at this partition and offset.
public struct KafkaDeliveryReport: Sendable, Equatable {
    public let topic: String
    public let partition: Int32
    public let offset: Int64

    public init(topic: String, partition: Int32, offset: Int64) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
    }

    public var topicPartition: TopicPartition { TopicPartition(topic: topic, partition: partition) }
}
