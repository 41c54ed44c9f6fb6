import ServiceSupport
import Synchronization

/// What a client's owner (producer, consumer, follower) is told from librdkafka's callbacks, in Swift types only.
/// Implementations must be cheap and must not call back into librdkafka in ways that wait for the thread the
/// callback runs on.
package protocol RDKafkaClientEvents: AnyObject, Sendable {
    /// An error librdkafka reported through `error_cb` (mostly transient; it recovers on its own unless fatal).
    func rdKafkaDidReport(_ error: KafkaError)
    /// Consumer group rebalance (only for group consumers), on the consumer's poll thread. The implementation must
    /// apply it (`assign`, `unassign`) before returning: `rebalance` is only valid during this call.
    func rdKafkaRebalance(_ rebalance: RDKafkaRebalance)
}

extension RDKafkaClientEvents {
    package func rdKafkaRebalance(_ rebalance: RDKafkaRebalance) {
        rebalance.applyDefault()
    }
}

/// The object librdkafka holds as a client's opaque: routes its callbacks to Swift.
///
/// Lives from before `rd_kafka_new` until after `rd_kafka_destroy` (retained by `RDKafkaClient`). The owner it
/// reports to is held weakly and set once the owner object exists; callbacks arriving before that (log lines during
/// creation) only log.
package final class RDKafkaCallbackContext: Sendable {
    package let logger: Logger
    package let statistics: KafkaStatisticsStore
    private let events = Locked<WeakEvents>(WeakEvents())

    private struct WeakEvents: Sendable {
        weak var target: (any RDKafkaClientEvents)?
    }

    package init(logger: Logger, statistics: KafkaStatisticsStore = KafkaStatisticsStore()) {
        self.logger = logger
        self.statistics = statistics
    }

    package func attach(_ target: any RDKafkaClientEvents) {
        events.withLock { $0.target = target }
    }

    var target: (any RDKafkaClientEvents)? {
        events.withLock { $0.target }
    }

    static func from(_ opaque: UnsafeMutableRawPointer?) -> RDKafkaCallbackContext? {
        guard let opaque else { return nil }
        return Unmanaged<RDKafkaCallbackContext>.fromOpaque(opaque).takeUnretainedValue()
    }
}
