import AppStore
import Dispatch
import Foundation
import Kafka
import ReceiptModel
import ServiceSupport
import Synchronization

/// Writing a message's records: each record published with retries, a record too large rewritten smaller, and the
/// message completed (its offset stored as the state allows) once every record of its group was acknowledged.
extension VerificationEngine {
    func publish(_ group: PublishGroup) {
        if group.records.isEmpty {
            finished(group)
            return
        }
        for record in group.records {
            publish(record, in: group, attempt: 0)
        }
    }

    func publish(_ record: OutgoingRecord, in group: PublishGroup, attempt: Int) {
        publisher.publish(record) { failure in
            guard let failure else {
                self.metrics.publishedRecord(record.kind)
                self.publishHealth.acknowledged(topic: record.topic)
                if group.acknowledge() { self.finished(group) }
                return
            }
            self.publishFailed(record, in: group, attempt: attempt, failure: failure)
        }
    }

    /// A record was not written. Transient failures are retried with backoff. A record too large for Kafka is
    /// rewritten smaller (a DLQ record without the original bytes; a retry record becomes the submission's final
    /// failure). A fatal producer error makes the process unhealthy: the work is abandoned (its offset is never
    /// stored, so it is redelivered after the restart). Other failures (authorization, unknown topic) are retried
    /// too, since an operator can fix them, but counted, logged as errors and make the process not ready.
    func publishFailed(_ record: OutgoingRecord, in group: PublishGroup, attempt: Int, failure: PublishFailure)
    {
        metrics.publishFailed(record.kind, retriable: failure.isRetriable)
        let owned = state.withLock { $0.isOwned(group.ticket) }
        guard owned, !failure.isFatal else {
            // Not owned: the partition went to another consumer, which reads the message again and writes its
            // outputs (results are idempotent), so dropping this one loses nothing.
            if failure.isFatal, publishHealth.fatalFailure(failure.message) {
                logger.error(
                    "fatal Kafka producer error: the verifier must be restarted (/healthz fails); unfinished work is "
                        + "redelivered",
                    [
                        "topic": .string(record.topic), "code": .int(Int(failure.code?.rawValue ?? 0)),
                        "error": .string(failure.message),
                    ])
            }
            if group.abandon() { perform(state.withLock { $0.abandon(group.ticket) }) }
            return
        }
        if failure.isMessageTooLarge, rewriteOversized(record, in: group, failure: failure) { return }
        let fields: KeyValuePairs<String, LogValue> = [
            "kind": .string(record.kind.rawValue), "topic": .string(record.topic), "attempt": .int(attempt + 1),
            "code": .int(Int(failure.code?.rawValue ?? 0)), "bytes": .int(record.value.count), "error": .string(failure.message),
        ]
        if failure.isRetriable {
            if !failure.isQueueFull || attempt % 100 == 0 { logger.warning("publishing failed, retrying", fields) }
        } else {
            let inARow = publishHealth.permanentFailure(topic: record.topic, code: failure.code)
            if attempt < 3 || attempt % 20 == 0 || inARow == publishHealth.notReadyAfter {
                logger.error(
                    "publishing failed and will not succeed until the topic or its ACLs are fixed; retrying", fields)
            }
        }
        clock.schedule(after: configuration.publishBackoff.wait(afterFailures: attempt + 1)) {
            self.publish(record, in: group, attempt: attempt + 1)
        }
    }

    /// Replaces a record Kafka refused as too large. Returns false when there is nothing smaller to write.
    func rewriteOversized(_ record: OutgoingRecord, in group: PublishGroup, failure: PublishFailure) -> Bool {
        let factory = router.factory
        if let smaller = factory.deadLetterWithoutOriginal(record) {
            logger.warning(
                "DLQ record too large for Kafka: writing it without the original message",
                [
                    "topic": .string(record.topic), "bytes": .int(record.value.count),
                    "code": .int(Int(failure.code?.rawValue ?? 0)),
                ])
            publish(smaller, in: group, attempt: 0)
            return true
        }
        if let records = factory.finalFailure(
            ofOversizedRetry: record, source: group.ticket, nowMs: clock.wallMilliseconds())
        {
            logger.error(
                "retry record too large for Kafka: the submission fails with apple_unavailable",
                [
                    "submission_id": .string(record.header(MessageHeaders.submissionId) ?? ""),
                    "topic": .string(record.topic), "bytes": .int(record.value.count),
                ])
            // The retry record was the group's only output: the failure records replace the whole group.
            publish(
                PublishGroup(
                    ticket: group.ticket, records: records, disposition: .result(.failed, .appleUnavailable),
                    submittedAtMs: group.submittedAtMs))
            return true
        }
        return false
    }

    func finished(_ group: PublishGroup) {
        switch group.disposition {
        case .result(let outcome, let reason):
            metrics.resultWritten(outcome, reason)
            if let submitted = group.submittedAtMs, submitted > 0 {
                metrics.resultLatency.observe(Double(clock.wallMilliseconds() - submitted) / 1000)
            }
        case .retry:
            metrics.retries.increment()
        case nil:
            break
        }
        switch group.notification {
        case .event(let type, let notificationType, let receivedAtMs):
            metrics.notificationEventWritten(type, notificationType: notificationType)
            if receivedAtMs > 0 {
                metrics.notificationLag.observe(Double(max(clock.wallMilliseconds() - receivedAtMs, 0)) / 1000)
            }
        case .rejected(let reason):
            metrics.notificationRejected(reason)
        case nil:
            break
        }
        for record in group.records {
            if case .deadLetter(let dead) = record.payload { metrics.deadLetterWritten(dead.reason) }
        }
        perform(state.withLock { $0.complete(group.ticket) })
    }
}
