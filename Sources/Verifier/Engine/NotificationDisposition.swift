import ReceiptModel

/// What became of a consumed notification, counted once its output record is acknowledged.
enum NotificationDisposition: Sendable, Equatable {
    /// A purchase event of `type` was written for Apple's `notificationType`; `receivedAtMs` is when the ingest (or
    /// the backfill) received the notification (event lag).
    case event(PurchaseEventType, notificationType: String, receivedAtMs: Int64)
    /// A DLQ record was written instead of an event.
    case rejected(Reason)
}
