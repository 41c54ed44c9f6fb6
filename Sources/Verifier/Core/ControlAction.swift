import Kafka

/// Something the dispatch state wants done to the consumer. Computed under the state's lock, applied outside it
/// by `ConsumerControlApplier`, which uses `sequence` to drop a batch overtaken by a newer one.
enum ControlAction: Sendable, Equatable {
    case pause(TopicPartition)
    case resume(TopicPartition)
    /// Store `nextOffset` (the next offset to read, as is) for commit. `epoch` is the partition's assignment.
    case storeOffset(TopicPartition, nextOffset: Int64, epoch: UInt64)
}

/// The control actions of one transition, numbered in the order the transitions happened.
struct ControlBatch: Sendable, Equatable {
    var sequence: UInt64
    var actions: [ControlAction]
    /// The batch resumes partitions after every partition was paused (an open breaker with work waiting): nothing
    /// else wakes librdkafka's fetchers then (`KafkaConsumer.resume(_:wakingFetchers:)`).
    var wakesFetchers: Bool
    /// Hold back (true) or release (false) the consumer's intake (the pending gate); nil: no change.
    var holdsIntake: Bool?

    init(sequence: UInt64, actions: [ControlAction], wakesFetchers: Bool = false, holdsIntake: Bool? = nil) {
        self.sequence = sequence
        self.actions = actions
        self.wakesFetchers = wakesFetchers
        self.holdsIntake = holdsIntake
    }
}
