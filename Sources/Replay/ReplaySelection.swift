import ServiceSupport
import ReceiptModel

/// Which DLQ records an operator wants moved back, and where.
public struct ReplayFilter: Sendable, Equatable {
    /// Only records with one of these reasons; empty = every reason.
    public var reasons: Set<Reason>
    /// Only records that failed at or after this time (`failed_at_ms`), when set.
    public var sinceMs: Int64?
    /// Only records that failed before this time, when set.
    public var untilMs: Int64?

    public init(reasons: Set<Reason> = [], sinceMs: Int64? = nil, untilMs: Int64? = nil) {
        self.reasons = reasons
        self.sinceMs = sinceMs
        self.untilMs = untilMs
    }

    public func matches(_ record: DeadLetterRecord) -> Bool {
        if !reasons.isEmpty, !reasons.contains(record.reason) { return false }
        if let sinceMs, record.failedAtMs < sinceMs { return false }
        if let untilMs, record.failedAtMs >= untilMs { return false }
        return true
    }
}

/// Where replayed submissions go.
public enum ReplayDestination: String, Sendable, CaseIterable {
    /// The submissions topic: verified again from scratch, like a new submission with the same id.
    case submissions
    /// The retry topic, due at once: a fresh set of retry rounds.
    case retry
}

/// What replaying one DLQ record means.
public enum ReplayDecision: Sendable, Equatable {
    /// Produce `value` with `key` to the destination.
    case replay(submissionId: String?, key: [UInt8]?, value: [UInt8])
    /// Produce the original notification record `value` with `key` back to the notifications topic, whatever the
    /// destination (a notification is verified again from its signed payload; its event keeps its `event_id`).
    case replayNotification(key: [UInt8]?, value: [UInt8])
    /// Not replayed: an earlier record of this run already replays the notification at `source`
    /// (`topic/partition/offset`), DLQ'd twice after a redelivery.
    case duplicateNotification(source: String)
    /// Not replayed: an earlier record of this run already replays the same submission.
    case duplicate(submissionId: String)
    /// Not replayed, with the reason (the record does not match the filter, or cannot be replayed there).
    case skip(String)
}

/// Decides, record by record, what a replay run does. Pure: no Kafka, so every rule is unit-tested.
///
/// Idempotent by `submission_id`: within a run each submission is replayed at most once, and across runs a
/// replayed submission keeps its id, so the verifier's results (same verdict, same `credit_key`s) stay idempotent.
///
/// A DLQ record of the notifications topic (a notification that did not verify) goes back to that topic unchanged,
/// once per source position per run; its event, if it now verifies, carries Apple's `notificationUUID` as ever.
public struct ReplayPlanner: Sendable {
    public let filter: ReplayFilter
    public let destination: ReplayDestination
    /// `NOTIFICATIONS_TOPIC`: DLQ records whose `source_topic` is this one are notifications.
    public let notificationsTopic: String
    private var replayedIds: Set<String> = []
    private var replayedNotifications: Set<String> = []

    public init(
        filter: ReplayFilter, destination: ReplayDestination,
        notificationsTopic: String = ServiceTopic.notifications.defaultName
    ) {
        self.filter = filter
        self.destination = destination
        self.notificationsTopic = notificationsTopic
    }

    /// The decision for the DLQ message `bytes`; `nowMs` is the not-before time of records sent to the retry topic.
    public mutating func decide(dlqValue bytes: [UInt8], nowMs: Int64) -> ReplayDecision {
        let record: DeadLetterRecord
        do {
            record = try MessageCoding.decode(DeadLetterRecord.self, from: bytes)
        } catch {
            return .skip("not a DLQ record of schema version \(DeadLetterRecord.currentSchemaVersion)")
        }
        guard filter.matches(record) else { return .skip("does not match the filter") }
        guard !record.originalValue.isEmpty else {
            // The verifier keeps no bytes when the record would have been too large for Kafka.
            return .skip(
                "the original was too large to keep in the DLQ; it is at \(record.sourceTopic) partition "
                    + "\(record.sourcePartition) offset \(record.sourceOffset) while the topic retains it")
        }
        guard let original = Base64.decode(record.originalValue) else {
            return .skip("original_value is not base64")
        }
        let originalKey = record.originalKey.flatMap(Base64.decode)
        if record.sourceTopic == notificationsTopic {
            let source = "\(record.sourceTopic)/\(record.sourcePartition)/\(record.sourceOffset)"
            guard replayedNotifications.insert(source).inserted else { return .duplicateNotification(source: source) }
            return .replayNotification(key: originalKey, value: original)
        }
        // A DLQ record of the retry topic carries a retry record; the submission is inside it.
        let submission: Submission?
        let submissionBytes: [UInt8]
        if let retry = try? MessageCoding.decode(RetryRecord.self, from: original) {
            submission = retry.submission
            submissionBytes = SubmissionJSON.encode(retry.submission)
        } else {
            submission = try? Submission.decodeValidated(from: original)
            submissionBytes = original
        }
        let submissionId = submission?.submissionId ?? record.submissionId
        if let submissionId {
            guard !replayedIds.contains(submissionId) else { return .duplicate(submissionId: submissionId) }
        }

        let decision: ReplayDecision
        switch destination {
        case .submissions:
            // Unchanged bytes: a submission that was malformed stays malformed (and says so again).
            decision = .replay(submissionId: submissionId, key: originalKey, value: submissionBytes)
        case .retry:
            guard let submission else {
                return .skip("not a valid submission; only the submissions topic takes it back as it is")
            }
            let retry = RetryRecord(
                submission: submission, round: 0, attempts: record.attempts, notBeforeMs: nowMs,
                lastAppleStatus: record.appleStatus, lastError: "replayed from the DLQ (\(record.reason.rawValue))")
            decision = .replay(
                submissionId: submission.submissionId, key: originalKey ?? Array(submission.partitionKey.utf8),
                value: RetryRecordJSON.encode(retry))
        }
        if let submissionId { replayedIds.insert(submissionId) }
        return decision
    }
}
