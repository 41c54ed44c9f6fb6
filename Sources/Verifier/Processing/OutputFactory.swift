import ReceiptModel

/// Builds the verifier's output records exactly per the contract: keyed like the consumed message, with the
/// `submission-id` header on all, `outcome` on results and `dlq-reason` on DLQ records.
public struct OutputFactory: Sendable {
    public let topics: VerifierTopics

    public init(topics: VerifierTopics) {
        self.topics = topics
    }

    public func result(_ result: VerificationResult, key: [UInt8]?) -> OutgoingRecord {
        OutgoingRecord(
            kind: .result, topic: topics.results, key: key, value: Self.encode(result),
            headers: [
                (MessageHeaders.submissionId, result.submissionId), (MessageHeaders.outcome, result.outcome.rawValue),
            ])
    }

    /// A `failed` result (no verdict could be reached) with the submission's echoed fields.
    public func failedResult(
        submissionId: String, orderId: String?, userId: String?, reason: Reason, message: String, appleStatus: Int?,
        attempts: Int, key: [UInt8]?, nowMs: Int64
    ) -> OutgoingRecord {
        result(
            VerificationResult(
                submissionId: submissionId, orderId: orderId, userId: userId, outcome: .failed, reason: reason,
                message: message, appleStatus: appleStatus, environment: nil, bundleId: nil, transactions: [],
                attempts: attempts, verifiedAtMs: nowMs),
            key: key)
    }

    /// The result of a verdict Apple gave.
    public func verdictResult(_ verdict: AppleVerdict, job: VerificationJob, nowMs: Int64) -> OutgoingRecord {
        let submission = job.submission
        return result(
            VerificationResult(
                submissionId: submission.submissionId, orderId: submission.orderId, userId: submission.userId,
                outcome: verdict.outcome, reason: verdict.reason, message: verdict.message,
                appleStatus: verdict.appleStatus, environment: verdict.environment, bundleId: verdict.bundleId,
                transactions: verdict.transactions, attempts: job.priorAttempts + verdict.attempts,
                verifiedAtMs: nowMs),
            key: job.message.key)
    }

    public func deadLetter(
        message: InputMessage, submissionId: String?, reason: Reason, text: String, appleStatus: Int?, attempts: Int,
        nowMs: Int64
    ) -> OutgoingRecord {
        let record = DeadLetterRecord(
            submissionId: submissionId, reason: reason, message: text, sourceTopic: message.partition.topic,
            sourcePartition: Int(message.partition.partition), sourceOffset: message.offset, originalKey: message.key,
            originalValue: message.value, appleStatus: appleStatus, attempts: attempts, failedAtMs: nowMs)
        var headers: [(name: String, value: String)] = []
        if let submissionId { headers.append((MessageHeaders.submissionId, submissionId)) }
        headers.append((MessageHeaders.dlqReason, reason.rawValue))
        return OutgoingRecord(
            kind: .deadLetter, topic: topics.deadLetter, key: message.key, value: Self.encode(record), headers: headers)
    }

    public func retry(_ record: RetryRecord, key: [UInt8]?) -> OutgoingRecord {
        OutgoingRecord(
            kind: .retry, topic: topics.retry, key: key, value: Self.encode(record),
            headers: [(MessageHeaders.submissionId, record.submission.submissionId)])
    }

    /// The message types hold only strings, integers, booleans and arrays of them: encoding cannot fail.
    static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        do {
            return try MessageCoding.encode(value)
        } catch {
            preconditionFailure("encoding \(T.self) failed: \(error)")
        }
    }
}
