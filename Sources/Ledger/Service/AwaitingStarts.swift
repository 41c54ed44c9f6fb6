import Kafka

/// The assigned partitions whose starting offsets are not read yet (the database did not answer on assignment), as
/// a value: the poll thread adds them once assigned and forgets them on revocation, the worker thread takes a
/// snapshot, reads and applies their offsets, and then marks exactly that snapshot done. Each entry carries the
/// ticket of the assignment that added it, so a partition revoked and assigned again while the worker was reading
/// stays awaiting under its new ticket (`AwaitingStartsTests`).
struct AwaitingStarts: Sendable, Equatable {
    /// Each awaiting partition and the ticket of the assignment that added it.
    private(set) var tickets: [TopicPartition: UInt64] = [:]
    private var lastTicket: UInt64 = 0

    var isEmpty: Bool { tickets.isEmpty }
    var count: Int { tickets.count }

    /// Assigned without their stored offsets: awaiting, each under a new ticket.
    mutating func add(_ partitions: [TopicPartition]) {
        for partition in partitions {
            lastTicket += 1
            tickets[partition] = lastTicket
        }
    }

    /// Revoked: their next owner reads the offsets itself.
    mutating func forget(_ partitions: [TopicPartition]) {
        for partition in partitions { tickets[partition] = nil }
    }

    /// Done for `snapshot` (taken before the offsets were read): removes each partition still under the ticket
    /// it had then; one revoked and assigned again since keeps awaiting.
    mutating func done(_ snapshot: [TopicPartition: UInt64]) {
        for (partition, ticket) in snapshot where tickets[partition] == ticket {
            tickets[partition] = nil
        }
    }
}
