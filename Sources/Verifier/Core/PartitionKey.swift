import Kafka

/// A topic partition as the verifier's core sees it: the Kafka module's own value type (pure, no librdkafka state),
/// so the core speaks the same type as the consumer it drives.
public typealias PartitionKey = TopicPartition
