import Synchronization

/// The outputs of one consumed message: its ticket completes when every record was acknowledged, or is abandoned
/// once (when its partition is gone and a record failed).
final class PublishGroup: Sendable {
    let ticket: MessageTicket
    let records: [OutgoingRecord]
    /// What the outputs mean, for metrics once they are acknowledged.
    let disposition: RoundDisposition?
    /// `submitted_at_ms` of the submission, when known (latency metric).
    let submittedAtMs: Int64?
    /// What the outputs of a consumed notification mean, for metrics once they are acknowledged.
    let notification: NotificationDisposition?
    private let remaining: Atomic<Int>
    private let abandoned = Atomic<Bool>(false)

    init(
        ticket: MessageTicket, records: [OutgoingRecord], disposition: RoundDisposition?, submittedAtMs: Int64?,
        notification: NotificationDisposition? = nil
    ) {
        self.ticket = ticket
        self.records = records
        self.disposition = disposition
        self.submittedAtMs = submittedAtMs
        self.notification = notification
        self.remaining = Atomic(records.count)
    }

    /// One record acknowledged; true when it was the last.
    func acknowledge() -> Bool {
        remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0
    }

    /// True the first time only.
    func abandon() -> Bool {
        !abandoned.exchange(true, ordering: .acquiringAndReleasing)
    }
}
