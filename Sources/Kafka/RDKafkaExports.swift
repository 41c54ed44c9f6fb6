// The value types of the librdkafka layer (`KafkaError`, `TopicPartition`, `KafkaMessage`, `KafkaHeader`,
// `KafkaDeliveryReport`, `KafkaStatistics`, `KafkaLibrary`) are this module's public API too: `import Kafka` is all
// a service needs. The C library itself stays behind `RDKafka` (this target cannot import `CRdKafka`).
@_exported import RDKafka

extension RDKafkaClient {
    /// A client for `configuration`, whose errors name a property's environment variable when it came from one.
    static func make(
        _ kind: Kind, configuration: KafkaConfiguration, context: RDKafkaCallbackContext,
        rebalanceCallback: Bool = false, closedError: KafkaError
    ) throws(KafkaError) -> RDKafkaClient {
        try RDKafkaClient(
            kind, properties: configuration.properties, origin: { configuration.origin(of: $0) }, context: context,
            rebalanceCallback: rebalanceCallback, closedError: closedError)
    }
}
