import Foundation
import Kafka
import ReceiptModel

/// What to do with a consumed message, decided from its bytes alone.
enum Triage: Sendable {
    /// A valid submission (fresh, or from a due retry record): run a round at Apple.
    case verify(VerificationJob)
    /// A retry record that is not due yet: hold it until `notBeforeMs`, then verify.
    case waitUntil(notBeforeMs: Int64, VerificationJob)
    /// Unprocessable: these records (DLQ, plus a `failed` / `malformed_submission` result when the id could be
    /// recovered) are the message's whole output.
    case malformed(records: [OutgoingRecord], problem: String, submissionId: String?)
}

/// Decodes consumed messages, each once: submissions from `RECEIPTS_TOPIC` (`Submission.decodeValidated`), retry
/// records from `RETRY_TOPIC` (decoded, then the submission inside checked by the same rules with
/// `Submission.validated()`). A message that cannot be decoded never stops its partition: it becomes DLQ output.
struct MessageTriage: Sendable {
    let factory: OutputFactory

    init(factory: OutputFactory) {
        self.factory = factory
    }

    func triage(_ message: KafkaMessage, nowMs: Int64) -> Triage {
        // Not parsed at all (it could hold the parser for seconds), nor copied into the DLQ record.
        if message.value.count > MessageLimits.maximumValueBytes {
            return malformed(
                message,
                problem: "the message is \(message.value.count) bytes, over the verifier's limit of "
                    + "\(MessageLimits.maximumValueBytes): not read (the ingest's body limit keeps submissions far "
                    + "smaller; a producer writing directly must too)",
                submissionId: nil, orderId: nil, userId: nil, attempts: 0, nowMs: nowMs)
        }
        if message.topic == factory.topics.retry {
            return triageRetryRecord(message, nowMs: nowMs)
        }
        do {
            let submission = try Submission.decodeValidated(from: message.value)
            return .verify(
                VerificationJob(submission: submission, message: message, completedRounds: 0, priorAttempts: 0))
        } catch {
            return malformed(
                message, problem: error.problem, submissionId: error.submissionId, orderId: error.orderId,
                userId: error.userId, clientId: error.clientId, attempts: 0, nowMs: nowMs)
        }
    }

    private func triageRetryRecord(_ message: KafkaMessage, nowMs: Int64) -> Triage {
        let record: RetryRecord
        do {
            record = try MessageCoding.decode(RetryRecord.self, from: message.value)
        } catch {
            let recovered = Self.recoverRetryIdentity(message.value)
            return malformed(
                message, problem: "retry record is not readable: \(MessageCoding.describe(error))",
                submissionId: recovered.submissionId, orderId: recovered.orderId, userId: recovered.userId,
                attempts: recovered.attempts, nowMs: nowMs)
        }
        // Validate the embedded submission by the rules of a fresh one (retry records can be replayed or
        // hand-written), from the record as decoded: no second encoding or parse.
        let submission: Submission
        do {
            submission = try record.submission.validated()
        } catch {
            return malformed(
                message, problem: "retry record holds an invalid submission: \(error.problem)",
                submissionId: error.submissionId, orderId: error.orderId, userId: error.userId,
                clientId: error.clientId, attempts: record.attempts, nowMs: nowMs)
        }
        let job = VerificationJob(
            submission: submission, message: message, completedRounds: max(record.round, 0),
            priorAttempts: max(record.attempts, 0))
        return record.notBeforeMs > nowMs ? .waitUntil(notBeforeMs: record.notBeforeMs, job) : .verify(job)
    }

    private func malformed(
        _ message: KafkaMessage, problem: String, submissionId: String?, orderId: String?, userId: String?,
        clientId: String? = nil, attempts: Int, nowMs: Int64
    ) -> Triage {
        var records = [
            factory.deadLetter(
                message: message, submissionId: submissionId, reason: .malformedSubmission, text: problem,
                appleStatus: nil, attempts: attempts, nowMs: nowMs)
        ]
        if let submissionId {
            records.append(
                factory.failedResult(
                    submissionId: submissionId, orderId: orderId, userId: userId, clientId: clientId,
                    reason: .malformedSubmission, message: problem, appleStatus: nil, attempts: attempts,
                    key: message.key, nowMs: nowMs))
        }
        return .malformed(records: records, problem: problem, submissionId: submissionId)
    }

    /// The ids of an unreadable retry record, when its JSON still has them.
    static func recoverRetryIdentity(_ bytes: [UInt8]) -> (
        submissionId: String?, orderId: String?, userId: String?, attempts: Int
    ) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
            let submission = object["submission"] as? [String: Any]
        else { return (nil, nil, nil, 0) }
        let id = (submission["submission_id"] as? String).flatMap {
            $0.isEmpty || $0.count > Submission.maximumIdLength ? nil : $0
        }
        return (
            id, submission["order_id"] as? String, submission["user_id"] as? String, object["attempts"] as? Int ?? 0
        )
    }
}
