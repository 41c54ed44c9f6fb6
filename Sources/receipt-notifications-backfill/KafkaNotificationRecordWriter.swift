import Kafka
import NotificationBackfill

/// Writes recovered notification records to `NOTIFICATIONS_TOPIC` with the idempotent producer (acks=all): a record
/// counts as written only once Kafka acknowledged it. A full local queue is waited out.
struct KafkaNotificationRecordWriter: NotificationRecordWriting {
    let producer: KafkaProducer
    let topic: String

    func write(key: [UInt8]?, value: [UInt8]) async -> String? {
        while true {
            do {
                _ = try await producer.send(topic: topic, key: key, value: value, headers: [])
                return nil
            } catch where error.isQueueFull {
                try? await Task.sleep(for: .milliseconds(10))
            } catch {
                return error.message
            }
        }
    }
}
