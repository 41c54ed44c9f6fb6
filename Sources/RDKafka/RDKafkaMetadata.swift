internal import CRdKafka

/// Topic metadata lookups (blocking: call from a client's own thread, never the cooperative pool).
enum RDKafkaMetadata {
    /// The partition ids of `topic`, or why they are not known (unknown topic, timeout).
    static func partitions(of topic: String, client: OpaquePointer, timeout: Duration) -> Result<[Int32], KafkaError> {
        guard let topicHandle = rd_kafka_topic_new(client, topic, nil) else {
            return .failure(KafkaError(code: KafkaErrorCode.invalidArgument, message: "invalid topic name '\(topic)'"))
        }
        defer { rd_kafka_topic_destroy(topicHandle) }
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let code = rd_kafka_metadata(client, 0, topicHandle, &metadata, timeout.rdKafkaMilliseconds)
        guard code == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
            return .failure(KafkaError.from(code, context: "cannot read metadata of \(topic)"))
        }
        defer { rd_kafka_metadata_destroy(metadata) }
        guard metadata.pointee.topic_cnt > 0, let topics = metadata.pointee.topics else {
            return .failure(KafkaError(code: KafkaErrorCode.unknownTopicOrPartition, message: "no metadata for \(topic)"))
        }
        let entry = topics[0]
        guard entry.err == RD_KAFKA_RESP_ERR_NO_ERROR, entry.partition_cnt > 0, let partitions = entry.partitions else {
            return .failure(KafkaError.from(entry.err, context: "topic \(topic) has no partitions"))
        }
        return .success((0..<Int(entry.partition_cnt)).map { partitions[$0].id })
    }
}
