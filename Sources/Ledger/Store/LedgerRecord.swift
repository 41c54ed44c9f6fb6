import Kafka

/// One consumed message as the store applies it (copied out of the consumer; no Kafka types below the service).
public struct LedgerRecord: Sendable, Equatable {
    public let topic: String
    public let partition: Int32
    public let offset: Int64
    public let value: [UInt8]
    /// The record's timestamp, used as the time of what it changes; the batch's time when absent.
    public let timestampMs: Int64?

    public init(topic: String, partition: Int32, offset: Int64, value: [UInt8], timestampMs: Int64? = nil) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.value = value
        self.timestampMs = timestampMs
    }

    public var partitionKey: TopicPartition { TopicPartition(topic: topic, partition: partition) }
}

/// What one batch did, for metrics and logs.
public struct BatchSummary: Sendable, Equatable {
    /// Messages applied now (including the ones dead-lettered).
    public var applied = 0
    /// Messages skipped because their offset was already applied (a redelivery after a crash or a rebalance).
    public var alreadyApplied = 0
    public var duplicateEvents = 0
    public var deadLettered = 0
    public var refusedClaims = 0
    public var transfers = 0
    public var parkedClaims = 0
    public var resolvedClaims = 0
    /// The next offset to read per partition after this batch.
    public var nextOffsets: [TopicPartition: Int64] = [:]

    public init() {}
}

/// The ledger's two input topics.
public struct LedgerTopics: Sendable, Equatable {
    public let results: String
    public let events: String

    public init(results: String, events: String) {
        self.results = results
        self.events = events
    }
}
