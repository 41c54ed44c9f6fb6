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
    static func decode(_ bytes: UnsafeRawBufferPointer) -> KafkaStatistics? {
        decode(Data(bytes))
    }

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
package final class KafkaStatisticsStore: Sendable {
    private struct State {
        var latest: KafkaStatistics?
        var generation = 0
        var markedGeneration = 0
    }
    private let state = Locked(State())

    package init() {}

    func update(_ statistics: KafkaStatistics) {
        state.withLock {
            $0.latest = statistics
            $0.generation += 1
        }
    }

    package var current: KafkaStatistics? { state.withLock { $0.latest } }

    /// Remembers the current generation (when something made the latest figures stale).
    package func mark() {
        state.withLock { $0.markedGeneration = $0.generation }
    }

    /// Whether statistics arrived since the last `mark`.
    package var updatedAfterMark: Bool { state.withLock { $0.generation > $0.markedGeneration } }
}
