import CRdKafka
import ServiceSupport
import Synchronization

/// What a client (producer, consumer) is told from librdkafka's callbacks. Implementations must be cheap and must
/// not call back into librdkafka in ways that wait for the thread the callback runs on.
protocol RDKafkaClientEvents: AnyObject, Sendable {
    /// An error librdkafka reported through `error_cb` (mostly transient; it recovers on its own unless fatal).
    func rdKafkaDidReport(_ error: KafkaError)
    /// Consumer group rebalance (only for group consumers), on the consumer's poll thread.
    func rdKafkaRebalance(
        _ client: OpaquePointer, _ code: rd_kafka_resp_err_t,
        _ partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?)
}

extension RDKafkaClientEvents {
    func rdKafkaRebalance(
        _ client: OpaquePointer, _ code: rd_kafka_resp_err_t,
        _ partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
    ) {
        // Not a group consumer: take librdkafka's default action.
        if code == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS {
            rd_kafka_assign(client, partitions)
        } else {
            rd_kafka_assign(client, nil)
        }
    }
}

/// The object librdkafka holds as a client's opaque: routes its callbacks to Swift.
///
/// Lives from before `rd_kafka_new` until after `rd_kafka_destroy` (retained by `RDKafkaHandle`). The client it
/// reports to is held weakly and set once the client object exists; callbacks arriving before that (log lines during
/// creation) only log.
final class RDKafkaCallbackContext: Sendable {
    let logger: Logger
    let statistics: KafkaStatisticsStore
    private let events = Locked<WeakEvents>(WeakEvents())

    private struct WeakEvents: Sendable {
        weak var target: (any RDKafkaClientEvents)?
    }

    init(logger: Logger, statistics: KafkaStatisticsStore) {
        self.logger = logger
        self.statistics = statistics
    }

    func attach(_ target: any RDKafkaClientEvents) {
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
