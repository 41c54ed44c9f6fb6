/// Limits on the messages the verifier consumes (`KafkaMessage`s from `RECEIPTS_TOPIC`, `RETRY_TOPIC` and
/// `NOTIFICATIONS_TOPIC`).
public enum MessageLimits {
    /// The largest message value the verifier reads (4 MiB): four times the ingest's default body limit and Kafka's
    /// default `max.message.bytes`, far above any real submission or notification (Apple's are a few KiB). A larger
    /// value is not parsed at all (JSON parsing costs time and memory in proportion to it: a 100 MB number would
    /// hold a worker for most of a minute) and becomes a `malformed_submission` DLQ record without the original bytes
    /// (copying them would cost as much again), pointing at it by source topic, partition and offset.
    public static let maximumValueBytes = 4 << 20
}
