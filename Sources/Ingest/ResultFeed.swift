import Kafka
import ServiceRuntime

/// Where the ingest's result index is fed from: a `KafkaResultFeed` (a group-less follower of `RESULTS_TOPIC`) in
/// the service, a fake in unit tests.
public protocol ResultFeed: ClosingWithinBound {
    /// Starts delivering the topic's messages to `deliver` (one at a time, in offset order per partition). Called
    /// once.
    func start(deliver: @escaping @Sendable (KafkaMessage) -> Void)

    /// True once the results written before the start (the read-back window) have been delivered, or once the
    /// feed stopped waiting for them (a bound): until then `/readyz` says the instance is not ready.
    var isCaughtUp: Bool { get }

    /// Stops delivering, waiting at most `timeout`. Idempotent.
    func close(timeout: Duration)
}
