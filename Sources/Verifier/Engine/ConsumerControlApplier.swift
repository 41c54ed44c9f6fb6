import Kafka
import ServiceSupport
import Synchronization

/// Applies `ControlBatch`es to the consumer in the order the dispatch state produced them, although batches are
/// computed under one lock and applied after it is released, possibly on several threads at once.
///
/// Invariants: for each partition a pause/resume is applied only when its batch is newer than the last one applied
/// to that partition (an overtaken batch's stale pause or resume is skipped); a stored offset never goes backwards
/// within an assignment epoch; every batch that stored an offset asks for a commit (the consumer paces them), so a
/// stored offset is committed within the commit interval instead of waiting for the periodic auto-commit, and a
/// crash redoes little more than the work in flight.
final class ConsumerControlApplier: Sendable {
    private struct Applied {
        var pauseSequence: [TopicPartition: UInt64] = [:]
        /// The batch whose intake hold or release was applied last.
        var intakeSequence: UInt64 = 0
        var stored: [TopicPartition: (epoch: UInt64, offset: Int64)] = [:]
    }

    private let control: any PartitionControl
    private let logger: Logger
    private let applied = Locked(Applied())
    /// Batches fully applied (or skipped as overtaken): compared with the state's `controlSequence` to know that
    /// every store a completion produced has reached the consumer.
    private let processed = Atomic<UInt64>(0)

    init(control: any PartitionControl, logger: Logger) {
        self.control = control
        self.logger = logger
    }

    var processedBatches: UInt64 { processed.load(ordering: .acquiring) }

    func apply(_ batch: ControlBatch?) {
        guard let batch else { return }
        defer { processed.add(1, ordering: .releasing) }
        // The consumer calls are quick and non-blocking; holding the lock across them keeps their order.
        let storedAny = applied.withLock { applied -> Bool in
            var storedAny = false
            var pause: [TopicPartition] = []
            var resume: [TopicPartition] = []
            for action in batch.actions {
                switch action {
                case .pause(let partition), .resume(let partition):
                    if let last = applied.pauseSequence[partition], last > batch.sequence { continue }
                    applied.pauseSequence[partition] = batch.sequence
                    if case .pause = action { pause.append(partition) } else { resume.append(partition) }
                case .storeOffset(let partition, let nextOffset, let epoch):
                    if let last = applied.stored[partition],
                        last.epoch > epoch
                            || (last.epoch == epoch && last.offset >= nextOffset)
                    {
                        continue
                    }
                    applied.stored[partition] = (epoch, nextOffset)
                    do {
                        try control.storeOffset(partition, nextOffset: nextOffset)
                        storedAny = true
                    } catch {
                        // Only happens for a partition no longer assigned: the offset is not committed and the
                        // messages after the last committed one are redelivered to the new owner.
                        logger.debug(
                            "offset not stored",
                            [
                                "partition": .string(partition.description),
                                "offset": .int(Int(nextOffset)), "error": .string("\(error)"),
                            ])
                    }
                }
            }
            if !pause.isEmpty { control.pause(pause) }
            if !resume.isEmpty { control.resume(resume, wakingFetchers: batch.wakesFetchers) }
            if let held = batch.holdsIntake, batch.sequence > applied.intakeSequence {
                applied.intakeSequence = batch.sequence
                control.holdIntake(held)
            }
            return storedAny
        }
        // Commits carry whatever is stored when they are issued: no ordering with other batches is needed.
        if storedAny { control.requestCommit() }
    }
}
