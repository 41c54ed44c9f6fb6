// The Kafka module.
