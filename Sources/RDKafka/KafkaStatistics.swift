import Foundation
import Synchronization
import ServiceSupport

/// The figures operators need, decoded from librdkafka's statistics JSON (`statistics.interval.ms`).
public struct KafkaStatistics: Sendable, Equatable {
    /// Producer: messages waiting in the local queue or in flight (`msg_cnt`).
    public var queuedMessages: Int = 0
    /// Consumer: messages fetched and waiting to be polled, summed over partitions (`fetchq_cnt`).
    public var fetchQueueMessages: Int = 0
    /// Consumer: lag per partition (`consumer_lag`: high watermark minus committed offset); partitions whose lag is
    /// not known yet are absent.
    public var consumerLag: [TopicPartition: Int64] = [:]
    /// Consumer group rebalances since the client started (`cgrp.rebalance_cnt`).
    public var rebalanceCount: Int = 0
    /// Broker connections that are up (configured bootstrap and learned brokers).
    public var brokersUp: Int = 0

    public init() {}

    /// Decodes the statistics JSON; nil when it is not the expected shape.
    public static func decode(_ data: Data) -> KafkaStatistics? {
        guard let root = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { return nil }
        var statistics = KafkaStatistics()
        statistics.queuedMessages = integer(root["msg_cnt"]).map(Int.init) ?? 0
        if let group = root["cgrp"] as? [String: Any] {
            statistics.rebalanceCount = integer(group["rebalance_cnt"]).map(Int.init) ?? 0
        }
        if let brokers = root["brokers"] as? [String: Any] {
            statistics.brokersUp = brokers.values.reduce(0) { count, value in
                // Bootstrap and learned brokers count; librdkafka's internal and logical (coordinator) ones do not.
                guard let broker = value as? [String: Any], broker["state"] as? String == "UP",
                    !["internal", "logical"].contains(broker["source"] as? String ?? "")
                else { return count }
                return count + 1
            }
        }
        if let topics = root["topics"] as? [String: Any] {
            for (topicName, topicValue) in topics {
                guard let topic = topicValue as? [String: Any],
                    let partitions = topic["partitions"] as? [String: Any]
                else { continue }
                for (_, partitionValue) in partitions {
                    guard let partition = partitionValue as? [String: Any],
                        let id = integer(partition["partition"]), id >= 0  // -1 is librdkafka's internal "unassigned"
                    else { continue }
                    statistics.fetchQueueMessages += integer(partition["fetchq_cnt"]).map(Int.init) ?? 0
                    if let lag = integer(partition["consumer_lag"]), lag >= 0 {
                        statistics.consumerLag[TopicPartition(topic: topicName, partition: Int32(id))] = lag
                    }
                }
            }
        }
        return statistics
    }

    private static func integer(_ value: Any?) -> Int64? {
        switch value {
        case let number as NSNumber: number.int64Value
        case let int as Int: Int64(int)
        default: nil
        }
    }
}

/// The latest statistics of one client, shared between librdkafka's callback and readers (metrics, `/readyz`).
///
/// librdkafka hands the statistics JSON to the client's poll thread, the thread that also delivers every delivery
/// report (a producer's acknowledgements). Decoding it there (Foundation's `JSONSerialization`, a few milliseconds for
/// a client with many partitions) would hold every acknowledgement waiting behind it once per interval, so `receive`
/// only copies the bytes and numbers them, and a queue of the store's own decodes them. Figures still in the queue
/// when newer ones arrive are skipped: only the latest matter.
package final class KafkaStatisticsStore: Sendable {
    private struct State {
        var latest: KafkaStatistics?
        /// The number of the figures in `latest` (0: none yet).
        var latestNumber = 0
        /// How many statistics the poll thread handed over, decoded or not: each one's number.
        var received = 0
        /// `received` when `mark` was last called.
        var markedNumber = 0
        /// The newest undecoded statistics and their number (nil: nothing waits).
        var pending: (bytes: Data, number: Int)?
    }
    private let state = Locked(State())
    private let decoding = DispatchQueue(label: "kafka-statistics")

    package init() {}

    /// Takes the JSON librdkafka handed over (`bytes` is valid only during the call) and decodes it on the store's
    /// queue.
    package func receive(_ bytes: UnsafeRawBufferPointer) {
        let copy = Data(bytes)
        let scheduleDecode = state.withLock { state -> Bool in
            state.received += 1
            let wasIdle = state.pending == nil
            state.pending = (copy, state.received)
            return wasIdle
        }
        guard scheduleDecode else { return }
        decoding.async { [self] in decodePending() }
    }

    private func decodePending() {
        guard let (bytes, number) = state.withLock({ state in defer { state.pending = nil }; return state.pending })
        else { return }
        guard let decoded = KafkaStatistics.decode(bytes) else { return }
        state.withLock {
            // One decode at a time, in the order received: a later number is never overwritten by an earlier one.
            guard number > $0.latestNumber else { return }
            $0.latest = decoded
            $0.latestNumber = number
        }
    }

    package var current: KafkaStatistics? { state.withLock { $0.latest } }

    /// Remembers what was received so far (when something made the figures received until now stale): statistics
    /// received before, even if decoded after, do not count as received after the mark.
    package func mark() {
        state.withLock { $0.markedNumber = $0.received }
    }

    /// Whether statistics received after the last `mark` were decoded.
    package var updatedAfterMark: Bool { state.withLock { $0.latestNumber > $0.markedNumber } }
}
