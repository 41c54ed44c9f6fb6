import Kafka

/// Why a record was not acknowledged by Kafka, classified so the engine can decide between retrying, rewriting the
/// record and giving up on the process.
struct PublishFailure: Error, Sendable, Equatable, CustomStringConvertible {
    let message: String
    /// librdkafka's `rd_kafka_resp_err_t` code, when the failure came from Kafka.
    let code: KafkaErrorCode?
    /// The producer's local queue is full (back-pressure, not an error of the record).
    let isQueueFull: Bool
    /// The producer is unusable (for example an idempotent producer that lost its guarantees): nothing it sends
    /// can succeed until the process is restarted.
    let isFatal: Bool
    /// A later attempt of the same record may succeed without any change (timeouts, leader moves, brokers down).
    let isRetriable: Bool

    init(
        message: String, code: KafkaErrorCode? = nil, isQueueFull: Bool = false, isFatal: Bool = false,
        isRetriable: Bool = true
    ) {
        self.message = message
        self.code = code
        self.isQueueFull = isQueueFull
        self.isFatal = isFatal
        self.isRetriable = !isFatal && (isRetriable || isQueueFull)
    }

    /// The failure a Kafka error stands for. An unknown topic counts as not retriable here although librdkafka
    /// retries it: the verifier's output topics exist by deployment, so only an operator can fix it.
    init(_ error: KafkaError) {
        self.init(
            message: error.message, code: error.code, isQueueFull: error.isQueueFull,
            isFatal: error.isFatal,
            isRetriable: error.isRetriable && !Self.unknownTopicCodes.contains(error.code))
    }

    static let unknownTopicCodes: Set<KafkaErrorCode> = [
        KafkaErrorCode.unknownTopic, KafkaErrorCode.unknownTopicOrPartition,
    ]

    /// Codes meaning the record itself is larger than the producer or the broker accepts: retrying the same
    /// bytes can never succeed (a message too large, from the producer or the broker, or a batch larger than the
    /// broker's segment size).
    static let tooLargeCodes: Set<KafkaErrorCode> = [.messageSizeTooLarge, .recordListTooLarge]

    /// The record is too large to ever be written as it is.
    var isMessageTooLarge: Bool { code.map(Self.tooLargeCodes.contains) ?? false }

    var description: String { message }
}

/// Writes the verifier's output records (results, retry and DLQ records).
protocol RecordPublishing: Sendable {
    /// Enqueues `record` without blocking. `completion` is called exactly once, on any thread: with nil once Kafka
    /// acknowledged the record (acks=all), or with the failure (including a refusal to enqueue).
    func publish(_ record: OutgoingRecord, completion: @escaping @Sendable (PublishFailure?) -> Void)
}
