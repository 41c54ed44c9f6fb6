import Kafka
import ServiceSupport
import Synchronization

/// The results topic followed without a consumer group (every ingest instance sees every result), starting at the
/// first message of the read-back window.
///
/// Catching up: `KafkaTopicFollower` reports neither the end offsets it started from nor reaching them, so the feed
/// counts the read-back as consumed once partitions are followed and no message older than the start arrived for
/// `quietPeriod`, or at the latest `readinessBound` after the start. Without a read-back window it is caught up as
/// soon as partitions are followed (or the bound passed: a topic that does not exist yet has nothing to read back).
public final class KafkaResultFeed: ResultFeed {
    private let follower: KafkaTopicFollower
    private let shared: Shared
    private let readsBack: Bool
    private let quietPeriodNs: UInt64
    private let readinessBoundNs: UInt64
    private let logger: Logger

    /// What the follower's thread and the feed share.
    private final class Shared: Sendable {
        /// The closure inside a struct: a `Mutex` of a bare (optional) function type would reabstract the closure on
        /// every `withLock` and write back a wrapped copy, growing a chain of thunks with each message.
        let deliver = Mutex<MessageSink?>(nil)
        let progress = Mutex(Progress())
    }

    private struct Progress {
        var startedNs: UInt64?
        /// When partitions were first seen followed.
        var followingSinceNs: UInt64?
        var lastReadBackNs: UInt64?
        var caughtUp = false
    }

    /// - Parameters:
    ///   - configuration: librdkafka properties (consumer side; producer-only properties are dropped by the caller).
    ///   - replay: how much of the topic is read back at start.
    ///   - readinessBound: the longest `/readyz` waits for the read-back.
    /// - Throws: `KafkaError` when the configuration is invalid.
    public init(
        configuration: KafkaConfiguration, topic: String, replay: ResultReplayWindow,
        readinessBound: Duration = .seconds(10), quietPeriod: Duration = .milliseconds(500), logger: Logger
    ) throws(KafkaError) {
        let shared = Shared()
        let startedWallMs = Clock.wallMilliseconds()
        self.follower = try KafkaTopicFollower(
            configuration: configuration, topic: topic,
            startingAtTimestampMs: replay.startTimestampMs(nowMs: startedWallMs), logger: logger
        ) { message in
            if let time = message.timestampMs, time < startedWallMs {
                let now = Clock.monotonicNanoseconds()
                shared.progress.withLock { $0.lastReadBackNs = now }
            }
            shared.deliver.withLock { $0 }?.deliver(message)
        }
        self.shared = shared
        self.readsBack = replay.startTimestampMs(nowMs: startedWallMs) != nil
        self.quietPeriodNs = Self.nanoseconds(quietPeriod)
        self.readinessBoundNs = Self.nanoseconds(readinessBound)
        self.logger = logger
    }

    public func start(deliver: @escaping @Sendable (KafkaMessage) -> Void) {
        shared.deliver.withLock { $0 = MessageSink(deliver: deliver) }
        let now = Clock.monotonicNanoseconds()
        shared.progress.withLock { progress in
            if progress.startedNs == nil { progress.startedNs = now }
        }
        follower.start()
    }

    public var isCaughtUp: Bool {
        let following = !follower.partitions.isEmpty
        let now = Clock.monotonicNanoseconds()
        let (caughtUp, becameCaughtUp, boundPassed) = shared.progress.withLock { progress -> (Bool, Bool, Bool) in
            if progress.caughtUp { return (true, false, false) }
            guard let started = progress.startedNs else { return (false, false, false) }
            if following, progress.followingSinceNs == nil { progress.followingSinceNs = now }
            var done = false
            var boundPassed = false
            if let since = progress.followingSinceNs {
                let lastActivity = max(since, progress.lastReadBackNs ?? 0)
                done = !readsBack || now - lastActivity >= quietPeriodNs
            }
            if !done, now - started >= readinessBoundNs {
                done = true
                boundPassed = true
            }
            progress.caughtUp = done
            return (done, done, boundPassed)
        }
        if becameCaughtUp {
            logger.info(
                "results feed caught up",
                ["partitions": .int(follower.partitions.count), "read_back": .bool(readsBack),
                 "gave_up_waiting": .bool(boundPassed)])
        }
        return caughtUp
    }

    public func close(timeout: Duration) {
        follower.close(timeout: timeout)
    }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }
}

/// How much of the results topic an ingest reads back when it starts (`RESULT_INDEX_REPLAY_SECONDS`).
public enum ResultReplayWindow: Sendable, Equatable {
    /// Results written in the last N seconds (0 = none: only results written after the start).
    case seconds(Int)
    /// Everything the topic retains (what is older than the index's age limit is skipped while indexing).
    case everything

    /// The follower's start: a time, 0 for the beginning, nil for the end.
    public func startTimestampMs(nowMs: Int64) -> Int64? {
        switch self {
        case .seconds(let seconds): seconds <= 0 ? nil : max(1, nowMs - Int64(seconds) * 1000)
        case .everything: 0
        }
    }
}

/// A message callback held in a struct (see `KafkaResultFeed.Shared.deliver`).
struct MessageSink: Sendable {
    let deliver: @Sendable (KafkaMessage) -> Void
}
