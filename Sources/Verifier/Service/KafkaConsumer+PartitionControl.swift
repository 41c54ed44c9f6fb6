import Kafka

/// The engine's pause/resume/store/commit actions go straight to the consumer: `KafkaConsumer` already has these
/// operations (quick, non-blocking, any thread), so nothing sits between `ConsumerControlApplier` and it.
extension KafkaConsumer: PartitionControl {}
