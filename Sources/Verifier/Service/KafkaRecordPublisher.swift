import Kafka

/// `RecordPublishing` over the Kafka producer (idempotent, acks=all): a record counts as written only once its
/// delivery report says so.
struct KafkaRecordPublisher: RecordPublishing {
    let producer: KafkaProducer

    func publish(_ record: OutgoingRecord, completion: @escaping @Sendable (PublishFailure?) -> Void) {
        let headers = record.headers.map { KafkaHeader(name: $0.name, string: $0.value) }
        do {
            try producer.send(topic: record.topic, key: record.key, value: record.value, headers: headers) { result in
                switch result {
                case .success: completion(nil)
                case .failure(let error):
                    completion(PublishFailure(error))
                }
            }
        } catch {
            completion(PublishFailure(error))
        }
    }
}
