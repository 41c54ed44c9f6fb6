/// Where recovered notification records go: `NOTIFICATIONS_TOPIC`.
public protocol NotificationRecordWriting: Sendable {
    /// Writes one record; returns nil once Kafka acknowledged it, else why not.
    func write(key: [UInt8]?, value: [UInt8]) async -> String?
}
