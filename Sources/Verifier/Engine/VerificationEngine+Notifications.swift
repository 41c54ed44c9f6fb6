import AppStore
import Dispatch
import Foundation
import Kafka
import Notifications
import ReceiptModel
import ServiceSupport
import Synchronization

/// Notifications: verified on the work queue and published directly, or held and verified again after a backoff
/// when their signing chain's revocation status cannot be had now.
extension VerificationEngine {
    /// Verifies a notification and publishes its event, or its DLQ record, like a malformed message: directly. A
    /// notification that cannot be judged now (`NotificationRejection.isRetryable`: its signing chain's revocation
    /// status is unavailable) is held instead and verified again after a backoff (`notificationRetryDelay`): it
    /// keeps its place in its partition (its offset and those after it are not stored, the partition window fills
    /// and pauses the partition as during an Apple outage), nothing is written, nothing is lost; on revoke or
    /// shutdown it is abandoned like in-flight work and redelivered.
    func processNotification(
        _ message: KafkaMessage, ticket: MessageTicket, processor: NotificationProcessor, nowMs: Int64,
        attempt: Int = 0
    ) {
        let outcome = processor.process(message.value)
        guard stillOwned(ticket) else { return }
        if case .failure(let rejection) = outcome, rejection.isRetryable {
            holdNotification(message, ticket: ticket, processor: processor, rejection: rejection, attempt: attempt)
            return
        }
        switch outcome {
        case .success(let notification):
            let event = notification.event
            if logger.isEnabled(.debug) {
                logger.debug(
                    "notification verified",
                    [
                        "event_id": .string(event.eventId), "type": .string(event.type.rawValue),
                        "notification_type": .string(event.notificationType),
                        "transaction_id": .string(event.transaction?.transactionId ?? ""),
                    ])
            }
            publish(
                PublishGroup(
                    ticket: ticket, records: [router.factory.event(notification)], disposition: nil,
                    submittedAtMs: nil,
                    notification: .event(
                        event.type, notificationType: event.notificationType, receivedAtMs: event.receivedAtMs)))
        case .failure(let rejection):
            logger.warning(
                "notification sent to the DLQ",
                [
                    "notification_uuid": .string(rejection.notificationUUID ?? ""),
                    "reason": .string(rejection.reason.rawValue), "problem": .string(rejection.message),
                    "topic": .string(message.topic), "partition": .int(Int(message.partition)),
                    "offset": .int(Int(message.offset)), "bytes": .int(message.value.count),
                ])
            let record = router.factory.deadLetter(
                message: message, submissionId: nil, reason: rejection.reason, text: rejection.message,
                appleStatus: nil, attempts: 0, nowMs: nowMs)
            publish(
                PublishGroup(
                    ticket: ticket, records: [record], disposition: nil, submittedAtMs: nil,
                    notification: .rejected(rejection.reason)))
        }
    }

    /// The waits before verifying a held notification again: 1 s, doubling, at most 60 s.
    static let notificationBackoff = Backoff(initial: .seconds(1), maximum: .seconds(60))

    /// The wait after verifying a held notification failed `attempt + 1` times.
    static func notificationRetryDelay(attempt: Int) -> Duration {
        notificationBackoff.wait(afterFailures: attempt + 1)
    }

    func holdNotification(
        _ message: KafkaMessage, ticket: MessageTicket, processor: NotificationProcessor,
        rejection: NotificationRejection, attempt: Int
    ) {
        let delay = Self.notificationRetryDelay(attempt: attempt)
        let fields: KeyValuePairs<String, LogValue> = [
            "notification_uuid": .string(rejection.notificationUUID ?? ""), "attempt": .int(attempt + 1),
            "retry_in_ms": .int(Int(delay.clampedMilliseconds)), "problem": .string(rejection.message),
            "topic": .string(message.topic), "partition": .int(Int(message.partition)),
            "offset": .int(Int(message.offset)),
        ]
        if attempt == 0 { logger.warning("notification held: it cannot be verified now, retrying", fields) } else {
            logger.info("notification still held", fields)
        }
        clock.schedule(after: delay) { [self] in
            // Given up meanwhile (revoke, shutdown): the partition's next owner reads it again.
            guard stillOwned(ticket) else { return }
            enqueue { [self] in
                processNotification(
                    message, ticket: ticket, processor: processor, nowMs: clock.wallMilliseconds(),
                    attempt: attempt + 1)
            }
        }
        metrics.notificationsHeld.increment()
    }
}
