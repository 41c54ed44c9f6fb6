import AppStore
import Kafka
import Notifications
import ReceiptModel
import ServiceSupport

/// Builds the verifier's output records exactly per the contract: keyed like the consumed message, with the
/// `submission-id` header on all (when known), `outcome` on results and `dlq-reason` on DLQ records; purchase events
/// keyed by original transaction id with `event-id` and `event-type`.
public struct OutputFactory: Sendable {
    public let topics: TopicNames

    public init(topics: TopicNames) {
        self.topics = topics
    }

    func result(_ result: VerificationResult, key: [UInt8]?) -> OutgoingRecord {
        OutgoingRecord(
            .result(result), topic: topics.results, key: key, value: VerificationResultJSON.encode(result),
            headers: [
                (MessageHeaders.submissionId, result.submissionId), (MessageHeaders.outcome, result.outcome.rawValue),
            ])
    }

    /// A `failed` result for a message that is not a readable submission, with what could be recovered of it.
    func failedResult(
        submissionId: String, orderId: String?, userId: String?, clientId: String? = nil, reason: Reason,
        message: String, appleStatus: Int?, attempts: Int, key: [UInt8]?, nowMs: Int64
    ) -> OutgoingRecord {
        result(
            VerificationResult(
                submissionId: submissionId, orderId: orderId, userId: userId, clientId: clientId, outcome: .failed,
                reason: reason, message: message, appleStatus: appleStatus, environment: nil, bundleId: nil,
                transactions: [], attempts: attempts, verifiedAtMs: nowMs),
            key: key)
    }

    /// A `failed` result (no verdict could be reached) for a readable submission.
    func failedResult(
        for submission: Submission, reason: Reason, source: VerificationSource, message: String, appleStatus: Int?,
        attempts: Int, key: [UInt8]?, nowMs: Int64
    ) -> OutgoingRecord {
        result(
            VerificationResult(
                submissionId: submission.submissionId, orderId: submission.orderId, userId: submission.userId,
                clientId: submission.clientId, outcome: .failed, reason: reason, source: source, message: message,
                appleStatus: appleStatus, environment: nil, bundleId: nil, transactions: [],
                submissionFingerprint: submission.fingerprint, attempts: attempts, verifiedAtMs: nowMs),
            key: key)
    }

    /// The result of a verdict Apple gave.
    func verdictResult(_ verdict: ReceiptVerdict, job: VerificationJob, nowMs: Int64) -> OutgoingRecord {
        let submission = job.submission
        return result(
            VerificationResult(
                submissionId: submission.submissionId, orderId: submission.orderId, userId: submission.userId,
                clientId: submission.clientId, outcome: verdict.outcome, reason: verdict.reason,
                source: verdict.source, message: verdict.message, appleStatus: verdict.appleStatus,
                environment: verdict.environment, bundleId: verdict.bundleId, transactions: verdict.transactions,
                appTransaction: verdict.appTransaction, submissionFingerprint: submission.fingerprint,
                attempts: job.priorAttempts + verdict.attempts,
                verifiedAtMs: nowMs),
            key: job.message.key)
    }

    /// A DLQ record of `message` with its original key and bytes, except bytes over `MessageLimits.maximumValueBytes`
    /// (not copied: `message` says where the original is).
    public func deadLetter(
        message: KafkaMessage, submissionId: String?, reason: Reason, text: String, appleStatus: Int?, attempts: Int,
        nowMs: Int64
    ) -> OutgoingRecord {
        let keepsOriginal = message.value.count <= MessageLimits.maximumValueBytes
        let record = DeadLetterRecord(
            submissionId: submissionId, reason: reason,
            message: keepsOriginal
                ? text
                : text + " (the original message, \(message.value.count) bytes, is not copied here: read it at "
                    + "source_topic/source_partition/source_offset)",
            sourceTopic: message.topic, sourcePartition: Int(message.partition),
            sourceOffset: message.offset, originalKey: message.key, originalValue: keepsOriginal ? message.value : [],
            appleStatus: appleStatus, attempts: attempts, failedAtMs: nowMs)
        var headers: [(name: String, value: String)] = []
        if let submissionId { headers.append((MessageHeaders.submissionId, submissionId)) }
        headers.append((MessageHeaders.dlqReason, reason.rawValue))
        return OutgoingRecord(
            .deadLetter(record), topic: topics.deadLetter, key: message.key, value: MessageCoding.encodeMessage(record),
            headers: headers)
    }

    /// `record` (a DLQ record Kafka refused as too large) without the original bytes: `original_value` is empty and
    /// `message` says why; the source topic, partition and offset still identify the original message.
    /// - Returns: nil when `record` is not a DLQ record or already carries no original bytes (nothing to drop).
    func deadLetterWithoutOriginal(_ record: OutgoingRecord) -> OutgoingRecord? {
        guard case .deadLetter(var dead) = record.payload, !dead.originalValue.isEmpty else { return nil }
        dead.message +=
            " (the original message, \(Self.base64Length(dead.originalValue)) bytes, was too large to keep "
            + "here: read it at source_topic/source_partition/source_offset)"
        dead.originalValue = ""
        return OutgoingRecord(
            .deadLetter(dead), topic: record.topic, key: record.key, value: MessageCoding.encodeMessage(dead), headers: record.headers)
    }

    /// The final failure of a submission whose retry record Kafka refused as too large: a DLQ record without the
    /// original bytes plus a `failed` / `apple_unavailable` result, as after the last round.
    /// - Parameter source: the consumed message the retry record was written for (its offset identifies it).
    /// - Returns: nil when `record` is not a retry record.
    func finalFailure(ofOversizedRetry record: OutgoingRecord, source: MessageTicket, nowMs: Int64)
        -> [OutgoingRecord]?
    {
        guard case .retry(let retry) = record.payload else { return nil }
        let submission = retry.submission
        let text =
            "no verdict from Apple after \(retry.round) rounds (\(retry.attempts) calls): \(retry.lastError); "
            + "no further round: its retry record (\(record.value.count) bytes) is larger than Kafka accepts"
        let dead = deadLetter(
            message: KafkaMessage(
                topic: source.partition.topic, partition: source.partition.partition, offset: source.offset,
                key: record.key, value: []),
            submissionId: submission.submissionId, reason: .appleUnavailable,
            text: text + " (the original message was too large to keep here: read it at source_topic/"
                + "source_partition/source_offset)",
            appleStatus: retry.lastAppleStatus, attempts: retry.attempts, nowMs: nowMs)
        let result = failedResult(
            for: submission, reason: .appleUnavailable, source: retry.source ?? .verifyReceipt, message: text,
            appleStatus: retry.lastAppleStatus, attempts: retry.attempts, key: record.key, nowMs: nowMs)
        return [dead, result]
    }

    /// The decoded length of base64 `text`.
    private static func base64Length(_ text: String) -> Int {
        text.utf8.count / 4 * 3 - text.utf8.suffix(2).filter { $0 == UInt8(ascii: "=") }.count
    }

    /// A purchase event on `EVENTS_TOPIC`, keyed by its original transaction id (else its event id), with the
    /// `event-id` and `event-type` headers.
    public func event(_ notification: NotificationEvent) -> OutgoingRecord {
        OutgoingRecord(
            .event(notification.event), topic: topics.events, key: notification.key,
            value: PurchaseEventJSON.encode(notification.event),
            headers: [
                (MessageHeaders.eventId, notification.event.eventId),
                (MessageHeaders.eventType, notification.event.type.rawValue),
            ])
    }

    func retry(_ record: RetryRecord, key: [UInt8]?) -> OutgoingRecord {
        OutgoingRecord(
            .retry(record), topic: topics.retry, key: key, value: RetryRecordJSON.encode(record),
            headers: [(MessageHeaders.submissionId, record.submission.submissionId)])
    }
}
