/// A topic partition as the verifier's core sees it (independent of the Kafka module, so the core is testable
/// without librdkafka; the Kafka adapter converts).
public struct PartitionKey: Hashable, Sendable, CustomStringConvertible {
    public let topic: String
    public let partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)[\(partition)]" }
}
