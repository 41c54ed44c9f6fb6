internal import CRdKafka

/// One consumer-group rebalance as librdkafka reports it, with the only ways to answer it.
///
/// Invariant: valid only during the `RDKafkaClientEvents.rdKafkaRebalance` call that received it (it refers to
/// librdkafka's partition list of that callback); the receiver must call exactly one of `assign`, `unassign` or
/// `applyDefault` before returning, or librdkafka's group state machine stalls.
package struct RDKafkaRebalance {
    package enum Kind: Sendable {
        /// Partitions are being assigned to this member.
        case assign
        /// Partitions are being taken away (eager protocol: all of them, before the next assignment).
        case revoke
        /// The rebalance failed; the member unassigns and rejoins.
        case failed(KafkaError)
    }

    package let kind: Kind
    package let partitions: [TopicPartition]
    /// True under the cooperative (incremental) protocol, false under the eager one (`range`, the default).
    package let isCooperative: Bool
    private let client: OpaquePointer
    /// The callback's `rd_kafka_topic_partition_list_t *` (typed raw so that no C type leaves this module).
    private let list: UnsafeMutableRawPointer?

    init(
        client: OpaquePointer, code: rd_kafka_resp_err_t, list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
    ) {
        self.client = client
        self.list = UnsafeMutableRawPointer(list)
        self.partitions = RDKafkaTopicPartitionList.partitions(list)
        self.isCooperative = String(cString: rd_kafka_rebalance_protocol(client)) == "COOPERATIVE"
        switch code {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS: kind = .assign
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS: kind = .revoke
        default: kind = .failed(KafkaError.from(code, context: "rebalance failed"))
        }
    }

    private var cList: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>? {
        list?.assumingMemoryBound(to: rd_kafka_topic_partition_list_t.self)
    }

    /// Whether the revoked partitions were lost (session timed out) rather than handed over in order.
    package var isAssignmentLost: Bool { rd_kafka_assignment_lost(client) != 0 }

    /// Assigns the partitions; with `startingOffsets`, each starts at its entry there (absent: its beginning)
    /// instead of the group's committed offset.
    /// - Returns: why librdkafka refused the assignment, or nil.
    package func assign(startingOffsets: [TopicPartition: Int64]? = nil) -> KafkaError? {
        if let startingOffsets, let cList, let elements = cList.pointee.elems {
            for index in 0..<Int(cList.pointee.cnt) {
                let partition = TopicPartition(
                    topic: String(cString: elements[index].topic), partition: elements[index].partition)
                elements[index].offset = startingOffsets[partition] ?? Int64(RD_KAFKA_OFFSET_BEGINNING)
            }
        }
        if isCooperative {
            return rd_kafka_incremental_assign(client, cList).map {
                KafkaError.consuming($0, context: "cannot assign partitions")
            }
        }
        let code = rd_kafka_assign(client, cList)
        return code == RD_KAFKA_RESP_ERR_NO_ERROR ? nil : KafkaError.from(code, context: "cannot assign partitions")
    }

    /// Gives the partitions up (cooperative: these; eager: the whole assignment).
    /// - Returns: why librdkafka refused an incremental unassign, or nil (an eager unassign is not checked).
    @discardableResult
    package func unassign() -> KafkaError? {
        if isCooperative {
            return rd_kafka_incremental_unassign(client, cList).map {
                KafkaError.consuming($0, context: "cannot unassign partitions")
            }
        }
        rd_kafka_assign(client, nil)
        return nil
    }

    /// librdkafka's default answer (not a group consumer, or nobody to ask): assign what is assigned, else unassign.
    package func applyDefault() {
        if case .assign = kind {
            rd_kafka_assign(client, cList)
        } else {
            rd_kafka_assign(client, nil)
        }
    }
}
