/// A message consumed from `RECEIPTS_TOPIC` or `RETRY_TOPIC`, as the core sees it.
public struct InputMessage: Sendable {
    public let partition: PartitionKey
    public let offset: Int64
    /// The message key; results, retry and DLQ records are keyed the same way.
    public let key: [UInt8]?
    public let value: [UInt8]

    public init(partition: PartitionKey, offset: Int64, key: [UInt8]?, value: [UInt8]) {
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
    }
}
