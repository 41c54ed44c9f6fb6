/// Where a `KafkaTopicFollower` begins in each partition that exists when it starts. (Partitions that appear later
/// always begin at their beginning: everything in them was written after the follower started.)
public enum FollowerStart: Sendable, Equatable {
    /// Only messages written after the start: each partition's high watermark at that moment.
    case end
    /// Everything the partitions retain.
    case beginning
    /// The first message at or after this time (`rd_kafka_offsets_for_times`). Note that librdkafka 2.0.2's mock
    /// cluster (`embedded-kafka`) answers such lookups with the end offset, so against it this reads nothing.
    case timestamp(Int64)
    /// The most recent messages by offset, which works on every Kafka (no time lookup): each partition starts at
    /// `max(low watermark, high watermark − ⌈messages / partitions⌉)` (its share of `messages`, the partitions
    /// being those that exist at the start), and of the messages before the start's high watermark those whose
    /// timestamp is before `notBeforeMs` are skipped (never handed to `onMessage`). `notBeforeMs` nil keeps them.
    case recent(messages: Int, notBeforeMs: Int64?)

    /// The start the old `startingAtTimestampMs:` parameter meant: nil the end, 0 the beginning, else a time.
    public init(timestampMs: Int64?) {
        switch timestampMs {
        case nil: self = .end
        case 0?: self = .beginning
        case let time?: self = time < 0 ? .beginning : .timestamp(time)
        }
    }

    /// The share of `messages` each of `partitions` partitions reads back (`recent` only).
    static func share(of messages: Int, partitions: Int) -> Int64 {
        guard partitions > 0, messages > 0 else { return 0 }
        return Int64((messages + partitions - 1) / partitions)
    }
}
