/// Kafka header names the services write. Consumers may rely on them for routing without parsing the value.
public enum MessageHeaders {
    /// The submission's id, on submissions, results, retry and DLQ records.
    public static let submissionId = "submission-id"
    /// The message schema version, on submissions (`1`).
    public static let schemaVersion = "schema-version"
    /// `verified`, `rejected` or `failed`, on results.
    public static let outcome = "outcome"
    /// The DLQ reason code, on DLQ records.
    public static let dlqReason = "dlq-reason"
    /// The purchase event's `event_id` (Apple's `notificationUUID`), on purchase events.
    public static let eventId = "event-id"
    /// The purchase event's `type` (`credit`, `debit`, ...), on purchase events.
    public static let eventType = "event-type"
}
