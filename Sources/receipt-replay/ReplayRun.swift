import Dispatch
import Foundation
import Kafka
import ReceiptModel
import Replay
import ServiceSupport
import Synchronization

/// One replay: decide for every DLQ record, produce the selected ones (unless dry run), print what happened.
struct ReplayRun {
    let options: ReplayOptions
    /// Reads `deadLetter`; writes `receipts`, `retry` or `notifications`.
    let topics: TopicNames
    let logger: Logger

    /// Whether every selected record was acknowledged by Kafka (always true on a dry run).
    func execute(_ records: [KafkaMessage], kafka: KafkaConfiguration) throws -> Bool {
        var planner = ReplayPlanner(
            filter: options.filter, destination: options.destination, notificationsTopic: topics.notifications)
        let destinationTopic = options.destination == .submissions ? topics.receipts : topics.retry
        let producer = options.dryRun ? nil : try KafkaProducer(configuration: kafka, logger: logger)
        defer { producer?.close(timeout: .seconds(10)) }

        let pending = DispatchGroup()
        let failures = FailureCount()
        var counts: [String: Int] = [:]
        let nowMs = SystemTime.wallMilliseconds()
        for message in records {
            let decision = planner.decide(dlqValue: message.value, nowMs: nowMs)
            let origin = "\(message.topic)/\(message.partition)/\(message.offset)"
            switch decision {
            case .skip(let why):
                counts["skipped", default: 0] += 1
                printLine(action: "skipped", submissionId: nil, message: message, detail: why)
            case .duplicate(let submissionId):
                counts["duplicate", default: 0] += 1
                printLine(action: "duplicate", submissionId: submissionId, message: message, detail: nil)
            case .duplicateNotification(let source):
                counts["duplicate", default: 0] += 1
                printLine(action: "duplicate", submissionId: nil, message: message, detail: source)
            case .replayNotification(let key, let value):
                guard let producer else {
                    counts["would_replay", default: 0] += 1
                    printLine(action: "would_replay", submissionId: nil, message: message, detail: topics.notifications)
                    continue
                }
                counts["replayed", default: 0] += 1
                produce(
                    producer, topic: topics.notifications, key: key, value: value,
                    headers: [KafkaHeader(name: "replayed-from", string: origin)], submissionId: nil, message: message,
                    pending: pending, failures: failures)
            case .replay(let submissionId, let key, let value):
                guard let producer else {
                    counts["would_replay", default: 0] += 1
                    printLine(
                        action: "would_replay", submissionId: submissionId, message: message, detail: destinationTopic)
                    continue
                }
                var headers = [KafkaHeader(name: "replayed-from", string: origin)]
                if let submissionId { headers.append(KafkaHeader(name: MessageHeaders.submissionId, string: submissionId)) }
                counts["replayed", default: 0] += 1
                produce(
                    producer, topic: destinationTopic, key: key, value: value, headers: headers,
                    submissionId: submissionId, message: message, pending: pending, failures: failures)
            }
        }
        if producer != nil, pending.wait(timeout: .now() + .seconds(60)) == .timedOut {
            logger.error("Kafka did not acknowledge every replayed record within 60 s")
            return false
        }
        let failed = failures.value.load(ordering: .relaxed)
        var summary = counts.map { "\(JSONText.quoted($0.key)):\($0.value)" }.sorted()
        summary.append("\"failed\":\(failed)")
        summary.append("\"dry_run\":\(options.dryRun)")
        summary.append("\"destination\":\(JSONText.quoted(destinationTopic))")
        StandardOutput.writeLine("{\"summary\":{\(summary.joined(separator: ","))}}")
        return failed == 0
    }

    /// Produces one replayed record; its outcome is printed from the delivery report.
    private func produce(
        _ producer: KafkaProducer, topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader],
        submissionId: String?, message: KafkaMessage, pending: DispatchGroup, failures: FailureCount
    ) {
        pending.enter()
        do {
            try sendRetryingWhileQueueFull(producer, topic: topic, key: key, value: value, headers: headers) { result in
                switch result {
                case .success:
                    printLine(action: "replayed", submissionId: submissionId, message: message, detail: topic)
                case .failure(let error):
                    failures.value.add(1, ordering: .relaxed)
                    printLine(action: "failed", submissionId: submissionId, message: message, detail: error.message)
                }
                pending.leave()
            }
        } catch {
            failures.value.add(1, ordering: .relaxed)
            printLine(action: "failed", submissionId: submissionId, message: message, detail: error.message)
            pending.leave()
        }
    }

    private func sendRetryingWhileQueueFull(
        _ producer: KafkaProducer, topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader],
        completion: @escaping @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void
    ) throws(KafkaError) {
        while true {
            do {
                try producer.send(topic: topic, key: key, value: value, headers: headers, completion: completion)
                return
            } catch where error.isQueueFull {
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
    }
}

/// Deliveries that failed, shared with the delivery callbacks.
final class FailureCount: Sendable {
    let value = Atomic<Int>(0)
}

private func printLine(action: String, submissionId: String?, message: KafkaMessage, detail: String?) {
    var fields = [
        "\"action\":\(JSONText.quoted(action))",
        "\"submission_id\":\(submissionId.map(JSONText.quoted) ?? "null")",
        "\"dlq_partition\":\(message.partition)",
        "\"dlq_offset\":\(message.offset)",
    ]
    fields.append("\"detail\":\(detail.map(JSONText.quoted) ?? "null")")
    StandardOutput.writeLine("{\(fields.joined(separator: ","))}")
}

enum StandardOutput {
    private static let lock = Locked(())

    static func writeLine(_ line: String) {
        lock.withLock { _ in
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
    }
}
