/// Identifies one consumed message for the whole time the verifier works on it.
///
/// `epoch` is the assignment generation of the partition when the message was admitted: after a revoke and a new
/// assignment the same offset may be consumed again, and completions of the old generation must not touch the new
/// generation's offset tracking.
public struct MessageTicket: Hashable, Sendable, CustomStringConvertible {
    public let partition: PartitionKey
    public let epoch: UInt64
    public let offset: Int64

    public init(partition: PartitionKey, epoch: UInt64, offset: Int64) {
        self.partition = partition
        self.epoch = epoch
        self.offset = offset
    }

    public var description: String { "\(partition)@\(offset)#\(epoch)" }
}
