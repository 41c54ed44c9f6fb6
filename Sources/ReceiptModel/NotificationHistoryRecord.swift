import ServiceSupport

/// A `signedPayload` from Get Notification History as a `NOTIFICATIONS_TOPIC` record: a `NotificationRecord` of
/// origin `notification_history`, keyed as the ingest keys Apple's posts (the unverified original transaction id,
/// else the notification UUID), so it lands in the same partition as its subscription's other notifications. The
/// backfill and `receipt-reconcile` write recovered notifications this one way.
public enum NotificationHistoryRecord {
    /// nil when the payload is not a notification's shape (the verifier would refuse it anyway).
    public static func make(signedPayload: String, receivedAtMs: Int64) -> (key: [UInt8]?, value: [UInt8])? {
        let body = Array("{\"signedPayload\":\(JSONText.quoted(signedPayload))}".utf8)
        guard let request = try? NotificationRequest.parse(body),
            let value = try? MessageCoding.encode(
                NotificationRecord(
                    signedPayload: request.signedPayload, receivedAtMs: receivedAtMs, origin: .notificationHistory))
        else { return nil }
        return (request.partitionKey.map { Array($0.utf8) }, value)
    }
}
