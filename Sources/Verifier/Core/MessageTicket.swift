import Kafka

/// Identifies one consumed message for the whole time the verifier works on it.
///
/// `epoch` is the assignment generation of the partition when the message was admitted: after a revoke and a new
/// assignment the same offset may be consumed again, and completions of the old generation must not touch the new
/// generation's offset tracking.
struct MessageTicket: Hashable, Sendable, CustomStringConvertible {
    let partition: TopicPartition
    let epoch: UInt64
    let offset: Int64

    init(partition: TopicPartition, epoch: UInt64, offset: Int64) {
        self.partition = partition
        self.epoch = epoch
        self.offset = offset
    }

    var description: String { "\(partition)@\(offset)#\(epoch)" }
}
