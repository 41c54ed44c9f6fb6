import Kafka

/// What the dispatch state knows about one assigned partition.
struct PartitionDispatchState: Sendable {
    /// The assignment generation; tickets of other generations are stale.
    let epoch: UInt64
    var tracker = PartitionOffsetTracker()
    /// Admitted messages not yet completed or dropped (decoding, waiting, at Apple, being published).
    var live = 0
    /// Retry records waiting for their `not_before_ms`, by offset. While any waits, the partition is paused.
    var heldOffsets: Set<Int64> = []
    /// Window hysteresis: set at the window, cleared at the resume mark.
    var windowFull = false
    /// Revoke in progress: nothing more is admitted or dispatched.
    var revoking = false
    /// What the consumer was last told (nil: nothing yet in this assignment).
    var toldPaused: Bool?

    init(epoch: UInt64) {
        self.epoch = epoch
    }
}
