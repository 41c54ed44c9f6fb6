import Kafka
import Reconcile

/// Produces corrections with the idempotent producer (acks=all): a correction counts as produced only once Kafka
/// acknowledged it (its delivery report). A full local queue is waited out.
struct KafkaCorrectionProducer: CorrectionProducing {
    let producer: KafkaProducer

    func produce(topic: String, key: [UInt8]?, value: [UInt8], headers: [(name: String, value: String)]) async
        -> String?
    {
        let headers = headers.map { KafkaHeader(name: $0.name, string: $0.value) }
        while true {
            do {
                _ = try await producer.send(topic: topic, key: key, value: value, headers: headers)
                return nil
            } catch where error.isQueueFull {
                try? await Task.sleep(for: .milliseconds(10))
            } catch {
                return error.message
            }
        }
    }
}
