import Kafka

/// One consumed message as the store applies it: copied out of the consumer's `KafkaMessage` (the buffer and the
/// store hold no consumer type; `TopicPartition`, a plain value, names the partition), so the store and its tests
/// need no consumer.
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
    /// Purchase events whose `event_id` was applied before (another delivery of the same notification).
    public var duplicateEvents = 0
    /// Messages written to the ledger's dead-letter table instead of being applied.
    public var deadLettered = 0
    /// Claims refused by the ownership policy (the purchase belongs to another user).
    public var refusedClaims = 0
    /// Purchases moved to another owner by the ownership policy.
    public var transfers = 0
    /// Claims recorded (`pending_claims`) to wait for their owner: no user is linked to their token or id yet.
    public var parkedClaims = 0
    /// Waiting claims whose owner became known in this batch.
    public var resolvedClaims = 0
    /// Transactions whose `credit_key` differed from the key the ledger derived (pre-2026-12 keys).
    public var rederivedKeys = 0
    /// Sandbox purchases credited (into the sandbox book, or mixed under `LEDGER_SANDBOX_POLICY=credit`, or
    /// recorded without a grant under `ignore`).
    public var sandboxCredits = 0
    /// Valid claims that grant nothing by rule (family-shared items).
    public var declinedClaims = 0
    /// Events signed before the last one of their order (money events, or status events) applied to their purchase:
    /// recorded, nothing moved.
    public var staleEvents = 0
    /// Subscription periods replaced by an upgrade: their unused share taken back.
    public var upgrades = 0
    /// `CONSUMPTION_REQUEST`s recorded for the refund responder (redeliveries not counted).
    public var consumptionRequests = 0
    /// Consents to share consumption data withdrawn by `RESCIND_CONSENT` events (users, not events).
    public var consentsWithdrawn = 0
    /// Units refunds and upgrades could not take back, recorded as `unrecovered` (`LEDGER_CLAWBACK=floor`).
    public var unrecoveredUnits = 0
    /// Units refunds and upgrades could not take back, recorded as debt (`LEDGER_CLAWBACK=debt`).
    public var debtUnits = 0
    /// The next offset to read per partition after this batch.
    public var nextOffsets: [TopicPartition: Int64] = [:]
    /// Partitions whose offsets jumped past their stored next offset in this batch (`KafkaBinding.offsetWalk`):
    /// nothing of them from the jump on was applied; the worker holds them as offset gaps.
    public var offsetJumps: [KafkaBinding.OffsetGap] = []

    public init() {}
}

/// The ledger's two input topics: verification results and purchase events.
public struct LedgerTopics: Sendable, Equatable {
    public let results: String
    public let events: String

    public init(results: String, events: String) {
        self.results = results
        self.events = events
    }
}
