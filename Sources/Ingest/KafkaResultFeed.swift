import Dispatch
import Kafka
import ServiceSupport
import Synchronization

/// The results topic followed without a consumer group (every ingest instance sees every result), starting with a
/// read-back of recent results so that a new or restarted instance answers at once.
///
/// Read-back by offsets (`FollowerStart.recent`), which works on every Kafka: each partition starts at
/// `max(low, high − ⌈maxEntries / partitions⌉)` (the partition's share of what the index can hold), and of those
/// results the ones older than the window (by message timestamp) are skipped. Caught up is the follower's: every
/// partition read up to its high watermark recorded at the start, or, at the latest, `readinessBound` after the
/// start (`/readyz` does not wait forever for a slow or unreachable cluster).
public final class KafkaResultFeed: ResultFeed {
    private let follower: KafkaTopicFollower
    private let shared: Shared
    private let readinessBoundNs: UInt64
    private let readinessBound: Duration
    private let logger: Logger

    /// What the follower's thread and the feed share.
    private final class Shared: Sendable {
        /// The closure inside a struct: a `Locked` of a bare (optional) function type would reabstract the closure on
        /// every `withLock` and write back a wrapped copy, growing a chain of thunks with each message.
        let deliver = Locked<MessageSink?>(nil)
        /// `SystemTime.monotonicNanoseconds()` at `start`, 0 before.
        let startedNs = Atomic<UInt64>(0)
    }

    /// - Parameters:
    ///   - configuration: librdkafka properties (consumer side; producer-only properties are dropped by the caller).
    ///   - replay: how much of the topic is read back at start.
    ///   - readBackLimit: at most this many results are read back, spread over the partitions (the index's
    ///     `maxEntries`: more could not be kept).
    ///   - readinessBound: the longest `/readyz` waits for the read-back.
    /// - Throws: `KafkaError` when the configuration is invalid.
    public init(
        configuration: KafkaConfiguration, topic: String, replay: ResultReplayWindow, readBackLimit: Int,
        readinessBound: Duration = .seconds(10), logger: Logger
    ) throws(KafkaError) {
        let shared = Shared()
        let start = replay.followerStart(nowMs: SystemTime.wallMilliseconds(), readBackLimit: readBackLimit)
        self.follower = try KafkaTopicFollower(
            configuration: configuration, topic: topic, start: start, logger: logger,
            onCaughtUp: {
                logger.info(
                    "results feed caught up",
                    ["read_back": .bool(start != .end),
                     "seconds": .double(SystemTime.secondsSince(shared.startedNs.load(ordering: .relaxed)))])
            }
        ) { message in
            shared.deliver.withLock { $0 }?.deliver(message)
        }
        self.shared = shared
        self.readinessBound = readinessBound
        self.readinessBoundNs = readinessBound.clampedNanoseconds
        self.logger = logger
    }

    public func start(deliver: @escaping @Sendable (KafkaMessage) -> Void) {
        shared.deliver.withLock { $0 = MessageSink(deliver: deliver) }
        let now = SystemTime.monotonicNanoseconds()
        _ = shared.startedNs.compareExchange(expected: 0, desired: now, ordering: .relaxed)
        follower.start()
        let follower = self.follower
        let logger = self.logger
        let bound = readinessBound
        guard readinessBoundNs > 0 else { return }  // told not to wait: nothing to warn about
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(readinessBoundNs))) {
            if !follower.isCaughtUp {
                logger.warning(
                    "results feed not caught up within the readiness bound; /readyz no longer waits for it",
                    ["bound_seconds": .double(Double(bound.components.seconds))])
            }
        }
    }

    /// The follower caught up (every partition read up to its high watermark at the start), or the readiness bound
    /// passed since `start`. Reads state only.
    public var isCaughtUp: Bool {
        if follower.isCaughtUp { return true }
        let started = shared.startedNs.load(ordering: .relaxed)
        return started > 0 && SystemTime.monotonicNanoseconds() &- started >= readinessBoundNs
    }

    public func close(timeout: Duration) {
        follower.close(timeout: timeout)
    }
}

/// How much of the results topic an ingest reads back when it starts (`RESULT_INDEX_REPLAY_SECONDS`).
public enum ResultReplayWindow: Sendable, Equatable {
    /// Results written in the last N seconds (0 = none: only results written after the start).
    case seconds(Int)
    /// Everything the topic retains (what is older than the index's age limit is skipped while indexing).
    case everything

    /// Where the results follower starts: the end (no window), the beginning (everything), or the most recent
    /// `readBackLimit` results by offset, keeping those of the last N seconds.
    public func followerStart(nowMs: Int64, readBackLimit: Int) -> FollowerStart {
        switch self {
        case .seconds(let seconds) where seconds <= 0: .end
        case .seconds(let seconds): .recent(messages: readBackLimit, notBeforeMs: nowMs - Int64(seconds) * 1000)
        case .everything: .beginning
        }
    }
}

/// A message callback held in a struct (see `KafkaResultFeed.Shared.deliver`).
struct MessageSink: Sendable {
    let deliver: @Sendable (KafkaMessage) -> Void
}
