import Kafka

/// How a write to Kafka that did not succeed ended, as the handler saw it.
enum KafkaWriteFailure: Sendable {
    /// No broker was reachable: nothing was handed to the producer.
    case noBroker
    /// The producer refused the message at once (queue full, too large, ...): it was not written.
    case refused(KafkaError)
    /// The delivery report carried an error (a timed-out message may still be written: idempotent producer).
    case failed(KafkaError)
    /// No delivery report came within the handler's own deadline (it may still be written).
    case noReport(afterMs: Int)

    /// Whether the message may be in Kafka after all (so its submission id stays reserved).
    var mayHaveBeenWritten: Bool {
        switch self {
        case .noBroker, .refused: false
        case .failed(let error): error.code == KafkaErrorCode.messageTimedOut
        case .noReport: true
        }
    }
}

extension APIError {
    /// The one answer for a write Kafka did not take, for a submission (the receipts API's codes, with the
    /// submission id) or a notification (always 503 with Retry-After: Apple sends it again). Codes: `kafka_timeout`
    /// when it may still be written, `kafka_queue_full` when the producer's queue is full, `body_too_large` (413) for a
    /// submission over the broker's limit, `kafka_unavailable` otherwise.
    static func kafkaWrite(
        _ failure: KafkaWriteFailure, of kind: PendingKafkaAnswer.Kind, id: String, retryAfter: Int,
        deliveryTimeoutMs: Int
    ) -> APIError {
        switch kind {
        case .submission:
            let answer: APIError
            switch failure {
            case .noBroker:
                answer = .kafkaUnavailable(retryAfter: retryAfter, "no Kafka broker is reachable")
            case .refused(let error) where error.isQueueFull:
                answer = .kafkaQueueFull(retryAfter: retryAfter)
            case .refused(let error) where error.code == KafkaErrorCode.messageSizeTooLarge:
                answer = .messageTooLarge()
            case .refused:
                answer = .kafkaUnavailable(retryAfter: retryAfter, "refused by the producer")
            case .failed(let error) where error.code == KafkaErrorCode.messageTimedOut:
                answer = .kafkaTimeout(retryAfter: retryAfter, timeoutMs: deliveryTimeoutMs)
            case .failed:
                answer = .kafkaUnavailable(retryAfter: retryAfter, "delivery failed")
            case .noReport:
                answer = .kafkaTimeout(retryAfter: retryAfter, timeoutMs: deliveryTimeoutMs)
            }
            return answer.about(id)
        case .notification:
            switch failure {
            case .noBroker:
                return .notificationNotWritten(
                    code: "kafka_unavailable", retryAfter: retryAfter, "no Kafka broker is reachable")
            case .refused(let error):
                return .notificationNotWritten(
                    code: error.isQueueFull ? "kafka_queue_full" : "kafka_unavailable", retryAfter: retryAfter,
                    "refused by the producer")
            case .failed(let error):
                return .notificationNotWritten(
                    code: error.code == KafkaErrorCode.messageTimedOut ? "kafka_timeout" : "kafka_unavailable",
                    retryAfter: retryAfter, "delivery failed")
            case .noReport(let afterMs):
                return .notificationNotWritten(
                    code: "kafka_timeout", retryAfter: retryAfter, "no acknowledgement within \(afterMs) ms")
            }
        }
    }
}
