import HTTPServer
import Kafka
import ReceiptModel
import ServiceSupport

/// `POST /v1/apple/notifications`: Apple's App Store Server Notifications V2, written to `NOTIFICATIONS_TOPIC`.
///
/// Nothing Apple sent may be lost between the answer and Kafka: the 200 comes from the delivery report only; any
/// other answer (503 with Retry-After) makes Apple send the notification again. Duplicates are harmless, but not
/// because anything here or in the verifier drops them: each becomes an event with the same `event_id` (Apple's
/// `notificationUUID`), and crediting dedupes events on it (docs/CREDITING.md).
extension IngestHandler {
    /// Kafka header carrying the (unverified) `notificationUUID`, when readable.
    static let notificationUUIDHeader = "notification-uuid"

    func receiveNotification(_ request: HTTPRequest, respond: @escaping HTTPResponder) {
        let notification: NotificationRequest
        do throws(NotificationRequest.Invalid) {
            notification = try NotificationRequest.parse(request.body)
        } catch {
            let error = APIError(error)
            metrics.notificationsInvalid.increment()
            logger.info(
                "notification rejected",
                ["code": .string(error.code), "body_bytes": .int(request.body.count)])
            return respond(error.response)
        }
        let record = NotificationRecord(
            signedPayload: notification.signedPayload, receivedAtMs: SystemTime.wallMilliseconds(), origin: .appleDelivery)
        let value: [UInt8]
        do {
            value = try MessageCoding.encode(record)
        } catch {
            metrics.notificationsUnavailable.increment()
            return respond(APIError.internalError("the notification could not be encoded").response)
        }
        let retryAfter = settings.retryAfterSeconds
        let deliveryTimeoutMs = settings.effectiveDeliveryTimeoutMs
        guard publisher.isConnected else {
            metrics.notificationsUnavailable.increment()
            logger.warning(
                "notification not written: no Kafka broker is reachable",
                ["notification_uuid": .string(notification.notificationUUID ?? "")])
            return respond(
                kafkaWriteAnswer(.noBroker, of: .notification, id: notification.notificationUUID ?? "").response)
        }
        var headers: [KafkaHeader] = []
        if let uuid = notification.notificationUUID {
            headers.append(KafkaHeader(name: Self.notificationUUIDHeader, string: uuid))
        }
        let metrics = self.metrics
        let logger = self.logger
        let uuid = notification.notificationUUID ?? ""
        let payloadBytes = notification.signedPayload.utf8.count
        let pending = PendingKafkaAnswer(kind: .notification, id: uuid, respond: respond)
        kafkaDeadlines.register(pending)
        do throws(KafkaError) {
            try publisher.publish(
                topic: settings.notificationsTopic, key: notification.partitionKey.map { Array($0.utf8) },
                value: value, headers: headers
            ) { result in
                // On the Kafka poll thread. Late (after the deadline's 503): nothing to answer; Apple sends it again.
                guard let answer = pending.claim() else { return }
                switch result {
                case .success:
                    metrics.notificationsAccepted.increment()
                    logger.debug(
                        "notification accepted",
                        ["notification_uuid": .string(uuid), "payload_bytes": .int(payloadBytes)])
                    answer(.json(200, "{\"status\":\"received\"}"))
                case .failure(let error):
                    metrics.notificationsUnavailable.increment()
                    logger.warning(
                        "notification not acknowledged by Kafka",
                        ["notification_uuid": .string(uuid), "kafka_code": .int(Int(error.code.rawValue))])
                    answer(
                        APIError.kafkaWrite(
                            .failed(error), of: .notification, id: uuid, retryAfter: retryAfter,
                            deliveryTimeoutMs: deliveryTimeoutMs
                        ).response)
                }
            }
        } catch {
            _ = pending.claim()
            metrics.notificationsUnavailable.increment()
            logger.warning(
                "notification refused by the Kafka producer",
                ["notification_uuid": .string(uuid), "kafka_code": .int(Int(error.code.rawValue))])
            respond(kafkaWriteAnswer(.refused(error), of: .notification, id: uuid).response)
        }
    }
}
