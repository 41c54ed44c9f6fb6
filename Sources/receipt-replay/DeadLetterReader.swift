import Dispatch
import Foundation
import Kafka
import ServiceSupport
import Synchronization

/// Reads a whole topic (the DLQ) from its beginning up to its end as it was when reading started.
enum DeadLetterReader {
    struct ReadError: Error, CustomStringConvertible {
        let description: String
    }

    private struct Progress {
        var messages: [KafkaMessage] = []
        var lastOffset: [Int32: Int64] = [:]
    }

    /// Every message of `topic`, ordered by partition then offset.
    static func readAll(
        topic: String, configuration: KafkaConfiguration, timeout: Duration, logger: Logger
    ) throws -> [KafkaMessage] {
        let progress = Locked(Progress())
        let follower = try KafkaTopicFollower(
            configuration: configuration, topic: topic, startingAtTimestampMs: 0, logger: logger
        ) { message in
            progress.withLock {
                $0.messages.append(message)
                $0.lastOffset[message.partition] = message.offset
            }
        }
        follower.start()
        defer { follower.close(timeout: .seconds(5)) }

        let deadline = ContinuousClock.now + timeout
        while follower.partitions.isEmpty {
            guard ContinuousClock.now < deadline else {
                throw ReadError(description: "topic \(topic) has no partitions (does it exist?)")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let marks = try follower.watermarks()
        logger.info(
            "reading DLQ", ["topic": .string(topic), "messages": .int(marks.values.reduce(0) { $0 + Int($1.high - $1.low) })])
        while true {
            let caughtUp = progress.withLock { progress in
                marks.allSatisfy { partition, mark in
                    mark.high <= mark.low || (progress.lastOffset[partition] ?? -1) >= mark.high - 1
                }
            }
            if caughtUp { break }
            guard ContinuousClock.now < deadline else {
                throw ReadError(description: "did not reach the end of \(topic) within \(timeout)")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let end = Dictionary(uniqueKeysWithValues: marks.map { ($0.key, $0.value.high) })
        return progress.withLock { $0.messages }
            .filter { $0.offset < (end[$0.partition] ?? 0) }
            .sorted { ($0.partition, $0.offset) < ($1.partition, $1.offset) }
    }
}
