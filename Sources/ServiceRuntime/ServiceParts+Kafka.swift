import Kafka
import ServiceSupport

/// A part whose close waits, at most the time it is given, for others to answer: a Kafka producer (its flush), a
/// consumer (its commit and leaving the group), a topic follower.
public protocol ClosingWithinBound: Sendable {
    func close(timeout: Duration)
}

extension KafkaProducer: ClosingWithinBound {}
extension KafkaConsumer: ClosingWithinBound {}

extension ServiceParts {
    /// Registers `client`, closed within `bound`.
    public func add(_ name: String, bound: Duration, closing client: some ClosingWithinBound) {
        add(name, bound: bound) { bound in
            client.close(timeout: bound)
            return true
        }
    }

    /// The service's Kafka producer, registered as it is made: closed within `closeBound` (what it still holds then
    /// is failed, so a drain flushes it first).
    /// - Throws: a settings error (exit 2) with librdkafka's complaint when the configuration is refused.
    public func makeProducer(
        configuration: KafkaConfiguration, logger: Logger, metrics: MetricsRegistry, closeBound: Duration
    ) throws(ServiceStartupError) -> KafkaProducer {
        let producer: KafkaProducer
        do {
            producer = try KafkaProducer(configuration: configuration, logger: logger, metrics: metrics)
        } catch {
            throw .settings("cannot create the Kafka producer: \(error.message) (kafka_code \(error.code.rawValue))")
        }
        add("Kafka producer", bound: closeBound, closing: producer)
        return producer
    }
}
