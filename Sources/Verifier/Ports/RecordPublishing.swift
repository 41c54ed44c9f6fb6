/// Why a record was not acknowledged by Kafka.
public struct PublishFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    /// The producer's local queue is full (back-pressure, not an error of the record).
    public let isQueueFull: Bool

    public init(message: String, isQueueFull: Bool = false) {
        self.message = message
        self.isQueueFull = isQueueFull
    }

    public var description: String { message }
}

/// Writes the verifier's output records (results, retry and DLQ records).
public protocol RecordPublishing: Sendable {
    /// Enqueues `record` without blocking. `completion` is called exactly once, on any thread: with nil once Kafka
    /// acknowledged the record (acks=all), or with the failure (including a refusal to enqueue).
    func publish(_ record: OutgoingRecord, completion: @escaping @Sendable (PublishFailure?) -> Void)
}
