import Kafka

/// Where accepted submissions go: a Kafka producer in the service, a fake in unit tests.
public protocol SubmissionPublisher: Sendable {
    /// Enqueues without blocking; see `KafkaProducer.send`: throws when the message is refused (then `completion`
    /// is never called), otherwise `completion` is called exactly once with the delivery result.
    func publish(
        topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader],
        completion: @escaping @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void
    ) throws(KafkaError)

    /// Whether some broker is reachable (for `/readyz` and for refusing early when none is).
    var isConnected: Bool { get }
}

extension KafkaProducer: SubmissionPublisher {
    public func publish(
        topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader],
        completion: @escaping @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void
    ) throws(KafkaError) {
        try send(topic: topic, key: key, value: value, headers: headers, completion: completion)
    }
}
