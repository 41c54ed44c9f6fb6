import FakeAppStore
import Foundation
import Kafka
import ReceiptModel
import Testing

import TestSupport

/// `receipt-notifications-backfill` against the fake App Store's Get Notification History (20 per page) and a real
/// verifier: notifications Apple never delivered become events.
@Suite(.serialized) struct NotificationBackfillProcessTests {
    private func runBackfill(_ arguments: [String], environment: [String: String]) async throws
        -> (status: Int32?, lines: [[String: Any]], process: ManagedProcess)
    {
        let process = try ManagedProcess(
            executable: try TestBinaries.path("receipt-notifications-backfill"), arguments: arguments,
            environment: environment)
        let status = await process.waitForExit(timeout: .seconds(90))
        let lines = process.stdoutLines.compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        return (status, lines, process)
    }

    /// Asks the fake to sign a notification and record it, delivering it to `url` when given.
    private func send(_ fake: FakeAppStoreProcess, type: String, url: String?, transactionId: String) async throws
        -> String
    {
        var query = "type=\(type)&transaction_id=\(transactionId)&retry_schedule_seconds=none"
        if let url {
            query += "&url=" + (url.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? url)
        } else {
            query += "&deliver=0"
        }
        let response = try await TestHTTPClient.send("POST", fake.url + "/admin/notifications/send?" + query)
        try #require(response.status == 200, "\(response.text)")
        return try #require(response.jsonObject?["notification_uuid"] as? String)
    }

    @Test func missedNotificationsArePagedThroughAndBecomeEventsOnce() async throws {
        let harness = try NotificationHarness()
        let minted = try FakePKIFiles.mint(into: harness.directory + "/pki")
        let pipeline = try await Pipeline.start(
            verifiers: 1, fakeArguments: ["--latency-ms", "5"] + minted.fakeArguments,
            verifierSettings: minted.verifierSettings)
        try harness.collectEvents(pipeline)
        let fake = pipeline.fake

        // 43 notifications the ingest never saw: 41 never sent, 2 sent to a dead endpoint; and 2 delivered (to an
        // endpoint that answers 200 and keeps nothing: switching an outage that is not on off).
        var missed: [String] = []
        let types = ["ONE_TIME_CHARGE", "DID_RENEW", "REFUND", "EXPIRED", "TEST"]
        for index in 0..<41 {
            missed.append(
                try await send(
                    fake, type: types[index % types.count], url: nil,
                    transactionId: String(2_000_000_000_100_000 + index)))
        }
        for index in 0..<2 {
            missed.append(
                try await send(
                    fake, type: "REFUND", url: "http://127.0.0.1:9/down",
                    transactionId: String(2_000_000_000_200_000 + index)))
        }
        var delivered: [String] = []
        for index in 0..<2 {
            delivered.append(
                try await send(
                    fake, type: "DID_RENEW", url: fake.url + "/admin/outage?on=0",
                    transactionId: String(2_000_000_000_300_000 + index)))
        }

        var environment = pipeline.kafka.environment.merging(Pipeline.topics) { $1 }
            .merging(minted.verifierSettings) { $1 }
        environment["APPLE_SERVER_API_URL"] = fake.url
        environment["APPLE_SERVER_API_SANDBOX_URL"] = fake.url + "/sandbox"
        environment["ALLOWED_BUNDLE_IDS"] = "com.example.game"
        let since = String(Int64(Date().timeIntervalSince1970 * 1000) - 3_600_000)

        let dry = try await runBackfill(["--since", since, "--only-failures", "--dry-run"], environment: environment)
        #expect(dry.status == 0, "\(dry.process.stderrTail())")
        #expect(dry.lines.filter { $0["page"] != nil }.count == 3, "43 entries are 3 pages of at most 20")
        let drySummary = try #require(dry.lines.last?["summary"] as? [String: Any])
        #expect(drySummary["notifications"] as? Int == 43 && drySummary["written"] as? Int == 0)
        // The dry run has exited, and a backfill exits only after Kafka acknowledged what it wrote: the topic's
        // offsets count every record it could have written, and events come only from those records.
        let notifications = try TopicCollector(
            bootstrapServers: pipeline.kafka.bootstrapServers, topic: NotificationHarness.notificationsTopic)
        defer { notifications.close() }
        #expect(try await notifications.recordsWritten() == 0, "a dry run writes no notification record")
        #expect(try await harness.events.recordsWritten() == 0)
        #expect(try harness.eventIds().isEmpty, "a dry run writes nothing")

        let run = try await runBackfill(["--since", since, "--only-failures"], environment: environment)
        #expect(run.status == 0, "\(run.process.stderrTail())")
        let pages = run.lines.filter { $0["page"] != nil }
        #expect(pages.map { $0["notifications"] as? Int } == [20, 20, 3])
        #expect(pages.map { $0["has_more"] as? Bool } == [true, true, false])
        let summary = try #require(run.lines.last?["summary"] as? [String: Any])
        #expect(summary["written"] as? Int == 43 && summary["failed"] as? Int == 0)
        #expect(try await notifications.recordsWritten() == 43, "the offsets count what a backfill writes")
        #expect(await harness.waitForEvents(missed, timeout: .seconds(60)))
        #expect(try harness.eventIds().isDisjoint(with: delivered), "--only-failures leaves delivered ones out")
        let records = try harness.writtenEvents()
        #expect(Dictionary(grouping: records, by: \.eventId).count == missed.count)

        // Everything, again: the delivered ones now too; what was already written repeats its event (same event id
        // and content; only received_at_ms, the time of this backfill, differs).
        let all = try await runBackfill(["--since", since], environment: environment)
        #expect(all.status == 0)
        #expect((all.lines.last?["summary"] as? [String: Any])?["written"] as? Int == 45)
        #expect(await harness.waitForEvents(missed + delivered, timeout: .seconds(60)))
        let byId = Dictionary(grouping: try harness.writtenEvents(), by: \.eventId)
        #expect(byId.count == 45)
        func sameButReceived(_ event: PurchaseEvent) -> PurchaseEvent {
            var event = event
            event.receivedAtMs = 0
            return event
        }
        #expect(
            byId.values.allSatisfy { copies in copies.allSatisfy { sameButReceived($0) == sameButReceived(copies[0]) } })
        harness.close()
        await pipeline.shutdown()
    }

    @Test func aWriteKafkaDoesNotAcknowledgeFailsTheBackfill() async throws {
        let directory = NSTemporaryDirectory() + "backfill-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let minted = try FakePKIFiles.mint(into: directory)
        let fake = try await FakeAppStoreProcess.start(arguments: minted.fakeArguments)
        _ = try await send(fake, type: "REFUND", url: nil, transactionId: "2000000000400000")
        var environment = minted.verifierSettings
        environment["KAFKA_BOOTSTRAP_SERVERS"] = "127.0.0.1:1"
        environment["KAFKA_MESSAGE_TIMEOUT_MS"] = "2000"
        environment["APPLE_SERVER_API_URL"] = fake.url
        environment["ALLOWED_BUNDLE_IDS"] = "com.example.game"
        let since = String(Int64(Date().timeIntervalSince1970 * 1000) - 3_600_000)
        let run = try await runBackfill(["--since", since], environment: environment)
        #expect(run.status == 1)
        let summary = try #require(run.lines.last?["summary"] as? [String: Any])
        #expect(summary["failed"] as? Int == 1 && summary["written"] as? Int == 0)
        let usage = try await runBackfill(["--until", since], environment: environment)
        #expect(usage.status == 2 && usage.process.stderrLines.joined().contains("--since is required"))
        await fake.stop()
    }
}
