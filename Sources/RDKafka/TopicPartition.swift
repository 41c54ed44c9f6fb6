/// One partition of one topic.
public struct TopicPartition: Hashable, Sendable, CustomStringConvertible, Comparable {
    public let topic: String
    public let partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)[\(partition)]" }

    public static func < (lhs: TopicPartition, rhs: TopicPartition) -> Bool {
        (lhs.topic, lhs.partition) < (rhs.topic, rhs.partition)
    }
}
