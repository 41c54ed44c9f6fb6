import Foundation
import Kafka
import ReceiptModel
import ServiceSupport
import Synchronization
import Testing

import TestSupport

/// `receipt-replay` against an embedded-kafka process: DLQ records in, submissions out.
@Suite(.serialized) struct ReceiptReplayTests {
    private func deadLetter(_ id: String, reason: Reason, failedAtMs: Int64) throws -> [UInt8] {
        let submission = Submission(
            submissionId: id, receiptData: "YQ==", userId: "user-\(id)", submittedAtMs: 1)
        return try MessageCoding.encode(
            DeadLetterRecord(
                submissionId: id, reason: reason, message: "test", sourceTopic: "iap.receipts.submitted",
                sourcePartition: 0, sourceOffset: 1, originalKey: Array("user-\(id)".utf8),
                originalValue: SubmissionJSON.encode(submission), appleStatus: 21005, attempts: 4,
                failedAtMs: failedAtMs))
    }

    private func runReplay(_ arguments: [String], kafka: EmbeddedKafkaProcess, topics: [String: String]) async throws
        -> (status: Int32?, lines: [[String: Any]])
    {
        let process = try ManagedProcess(
            executable: try TestBinaries.path("receipt-replay"), arguments: arguments,
            environment: kafka.environment.merging(topics) { $1 })
        let status = await process.waitForExit(timeout: .seconds(60))
        let lines = process.stdoutLines.compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        if status != 0 { Issue.record("receipt-replay exited \(String(describing: status)): \(process.stderrTail())") }
        return (status, lines)
    }

    @Test func dryRunShowsAndRealRunMovesOnlyTheSelectedRecordsOnce() async throws {
        let kafka = try await EmbeddedKafkaProcess.start(topics: [("dlq", 2), ("submitted", 2), ("retry", 2)])
        let topics = ["DLQ_TOPIC": "dlq", "RECEIPTS_TOPIC": "submitted", "RETRY_TOPIC": "retry"]
        let producer = try KafkaProducer(
            configuration: KafkaConfiguration(["bootstrap.servers": kafka.bootstrapServers]),
            logger: Logger(label: "test", threshold: .warning))
        defer { producer.close(timeout: .seconds(5)) }
        for (id, reason) in [("a", Reason.appleUnavailable), ("b", .configError), ("a", .appleUnavailable)] {
            _ = try await producer.send(
                topic: "dlq", key: Array(id.utf8), value: try deadLetter(id, reason: reason, failedAtMs: 5_000))
        }

        let dryRun = try await runReplay(["--dry-run", "--reason", "apple_unavailable"], kafka: kafka, topics: topics)
        #expect(dryRun.status == 0)
        let dryActions = dryRun.lines.compactMap { $0["action"] as? String }.sorted()
        #expect(dryActions == ["duplicate", "skipped", "would_replay"])

        let real = try await runReplay(["--reason", "apple_unavailable"], kafka: kafka, topics: topics)
        #expect(real.status == 0)
        #expect(real.lines.filter { $0["action"] as? String == "replayed" }.count == 1)

        let received = Locked<[KafkaMessage]>([])
        let follower = try KafkaTopicFollower(
            configuration: KafkaConfiguration(["bootstrap.servers": kafka.bootstrapServers]), topic: "submitted",
            startingAtTimestampMs: 0, logger: Logger(label: "test", threshold: .warning)
        ) { message in received.withLock { $0.append(message) } }
        follower.start()
        defer { follower.close(timeout: .seconds(5)) }
        #expect(await eventually(timeout: .seconds(15)) { received.withLock { !$0.isEmpty } })
        // receipt-replay exited after Kafka acknowledged its writes: the topic's offsets count every record it wrote,
        // and the follower has read them all once it holds that many.
        #expect(follower.partitions == [0, 1], "both partitions of the submissions topic are counted")
        let written = try follower.watermarks().values.reduce(0) { $0 + $1.high - $1.low }
        #expect(written == 1, "receipt-replay wrote \(written) records onto the submissions topic")
        #expect(await eventually(timeout: .seconds(15)) { received.withLock { Int64($0.count) } == written })
        let messages = received.withLock { $0 }
        #expect(messages.count == 1)
        let replayed = try MessageCoding.decode(Submission.self, from: try #require(messages.first).value)
        #expect(replayed.submissionId == "a")
        #expect(messages.first?.key == Array("user-a".utf8))
        #expect(messages.first?.headers.contains { $0.name == "replayed-from" } == true)
    }

    @Test func badUsageExitsTwoNamingTheProblem() async throws {
        let process = try ManagedProcess(
            executable: try TestBinaries.path("receipt-replay"), arguments: ["--reason", "nope"],
            environment: ["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"])
        #expect(await process.waitForExit() == 2)
        #expect(process.stderrLines.joined().contains("unknown reason 'nope'"))
    }
}
