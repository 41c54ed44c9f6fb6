import FakeAppStore
import Foundation
import Kafka
import ReceiptModel
import SignedData
import Testing

import TestPKI
import TestSupport

/// App Store notifications through real processes: records on NOTIFICATIONS_TOPIC -> receipt-verifier -> events on
/// EVENTS_TOPIC (or DLQ records), through duplicates, a crash and a replay.
@Suite(.serialized) struct NotificationPipelineTests {
    private func start(
        _ harness: NotificationHarness, verifiers: Int = 1, verifierSettings: [String: String] = [:]
    ) async throws -> Pipeline {
        let pipeline = try await Pipeline.start(
            verifiers: verifiers, verifierSettings: harness.verifierSettings().merging(verifierSettings) { $1 })
        try harness.collectEvents(pipeline)
        return pipeline
    }

    private func finish(_ pipeline: Pipeline, _ harness: NotificationHarness) async {
        harness.close()
        await pipeline.shutdown()
    }

    @Test func eachNotificationYieldsExactlyOneLogicalEventAndDuplicatesShareItsId() async throws {
        let harness = try NotificationHarness()
        let pipeline = try await start(harness)
        let types: [(String, String?, PurchaseEventType)] = [
            ("ONE_TIME_CHARGE", nil, .credit), ("SUBSCRIBED", "INITIAL_BUY", .credit), ("DID_RENEW", nil, .credit),
            ("REFUND", nil, .debit), ("REFUND_REVERSED", nil, .recredit), ("REVOKE", nil, .revoke),
            ("EXPIRED", "VOLUNTARY", .subscriptionStatus), ("CONSUMPTION_REQUEST", nil, .consumptionRequest),
            ("TEST", nil, .test), ("REFUND_DECLINED", nil, .info), ("A_TYPE_FROM_THE_FUTURE", nil, .info),
        ]
        var expected: [String: PurchaseEventType] = [:]
        var records: [(key: [UInt8], value: [UInt8])] = []
        for round in 0..<4 {
            for (index, (type, subtype, eventType)) in types.enumerated() {
                let notification = harness.notification(type, subtype: subtype) {
                    $0.originalTransactionId = "otx-\(round)-\(index % 3)"
                }
                records.append(try harness.record(notification))
                expected[notification.notificationUUID] = eventType
            }
        }
        for record in records { try await harness.produce(record, pipeline: pipeline) }
        // Apple retries: the same records again, the same bytes.
        for record in records.prefix(5) { try await harness.produce(record, pipeline: pipeline) }
        // And one that does not verify: a DLQ record, never an event.
        let forged = harness.notification("ONE_TIME_CHARGE")
        let impostor = try TestSigningPKI.mint().signer
        try await harness.produce(try harness.record(forged, signer: impostor), pipeline: pipeline)

        #expect(await harness.waitForEvents(expected.keys))
        let dead = await eventually(timeout: .seconds(30)) { !pipeline.deadLetters.messages.isEmpty }
        #expect(dead)
        try await Task.sleep(for: .seconds(1))  // anything written late would show now
        let events = try harness.writtenEvents()
        let byId = Dictionary(grouping: events, by: \.eventId)
        #expect(Set(byId.keys) == Set(expected.keys), "one logical event per notification, none for the forged one")
        for (id, copies) in byId {
            #expect(copies.allSatisfy { $0 == copies[0] }, "\(id): duplicates must be identical")
            #expect(copies[0].type == expected[id], "\(id): \(copies[0].notificationType) became \(copies[0].type)")
        }
        #expect(events.count >= expected.count && events.count <= expected.count + 5)
        let keys = try harness.events.messages.map { String(decoding: $0.key ?? [], as: UTF8.self) }
        #expect(keys.allSatisfy { $0.hasPrefix("otx-") || expected[$0] == .test || expected[$0] == .info })

        let deadLetters = try pipeline.deadLetters.messages.map {
            try MessageCoding.decode(DeadLetterRecord.self, from: $0.value)
        }
        #expect(deadLetters.count == 1)
        #expect(deadLetters.first?.reason == .invalidSignature && deadLetters.first?.submissionId == nil)
        #expect(deadLetters.first?.sourceTopic == NotificationHarness.notificationsTopic)

        let verifier = try #require(pipeline.runningVerifiers.first)
        let written = await verifier.metricSum("verifier_notification_events_total") ?? 0
        #expect(Int(written) == events.count)
        let rejected = await verifier.metricSum(
            "verifier_notification_rejections_total", labels: [#"reason="invalid_signature""#])
        #expect(rejected == 1)
        await finish(pipeline, harness)
    }

    @Test func aVerifierKilledMidStreamLosesNoEvent() async throws {
        let harness = try NotificationHarness()
        // Two messages per partition in flight: the stream takes long enough for the crash to land inside it.
        let pipeline = try await start(harness, verifierSettings: ["VERIFIER_PARTITION_WINDOW": "2"])
        var ids: [String] = []
        var records: [(key: [UInt8], value: [UInt8])] = []
        for index in 0..<2_000 {
            let notification = harness.notification(index % 2 == 0 ? "DID_RENEW" : "ONE_TIME_CHARGE") {
                $0.originalTransactionId = "otx-\(index % 97)"
            }
            ids.append(notification.notificationUUID)
            records.append(try harness.record(notification))
        }
        for record in records { try await harness.produce(record, pipeline: pipeline) }
        let someDone = await eventually(timeout: .seconds(60)) { ((try? harness.eventIds().count) ?? 0) >= 100 }
        #expect(someDone)
        let victim = try #require(pipeline.runningVerifiers.first)
        await pipeline.crash(victim)
        let atCrash = try harness.eventIds().count
        #expect(atCrash < ids.count, "the stream finished before the crash")

        try await pipeline.startVerifier(name: "receipt-verifier-restarted")
        #expect(await harness.waitForEvents(ids, timeout: .seconds(120)))
        let byId = Dictionary(grouping: try harness.writtenEvents(), by: \.eventId)
        #expect(byId.count == ids.count)
        #expect(byId.values.allSatisfy { copies in copies.allSatisfy { $0 == copies[0] } })
        #expect(pipeline.deadLetters.messages.isEmpty)
        await finish(pipeline, harness)
    }

    @Test func aNotificationFromAnUntrustedRootIsReplayedOnceTheRootIsTrusted() async throws {
        let harness = try NotificationHarness()
        // Verifiers started here (not by the pipeline): the first is stopped on purpose.
        let pipeline = try await start(harness, verifiers: 0)
        let old = try await ServiceProcess.start(.verifier, environment: pipeline.verifierEnvironment)
        // A second signing PKI, not yet in APPLE_ROOT_CERTIFICATES (for example a root rotation).
        let second = try TestSigningPKI.mint()
        let secondRoot = harness.directory + "/second-root.pem"
        try Data(second.rootCertificate.pem.utf8).write(to: URL(fileURLWithPath: secondRoot))
        let notification = harness.notification("REFUND") { $0.revocationPercentage = 25_000 }
        try await harness.produce(try harness.record(notification, signer: second.signer), pipeline: pipeline)
        #expect(await eventually(timeout: .seconds(30)) { !pipeline.deadLetters.messages.isEmpty })
        #expect(try harness.eventIds().isEmpty)

        #expect(await old.stop() == 0)
        let trusting = pipeline.verifierEnvironment.merging(harness.verifierSettings(extraRoots: [secondRoot])) { $1 }
        let verifier = try await ServiceProcess.start(
            .verifier, environment: trusting, name: "receipt-verifier-trusting")

        let replay = try ManagedProcess(
            executable: try TestBinaries.path("receipt-replay"), arguments: ["--reason", "invalid_signature"],
            environment: pipeline.kafka.environment.merging(Pipeline.topics) { $1 })
        #expect(await replay.waitForExit(timeout: .seconds(60)) == 0, "\(replay.stderrTail())")
        #expect(replay.stdoutLines.contains { $0.contains("\"action\":\"replayed\"") && $0.contains("notifications") })
        #expect(await harness.waitForEvents([notification.notificationUUID], timeout: .seconds(30)))
        let event = try #require(try harness.writtenEvents().first)
        #expect(event.type == .debit && event.transaction?.revocationPercentage == 25_000)
        #expect(await verifier.stop() == 0)
        await finish(pipeline, harness)
    }

    @Test func aNotificationPostedWhileBrokersAreDownIsRetriedByAppleAndYieldsOneLogicalEvent() async throws {
        let harness = try NotificationHarness()
        let minted = try FakePKIFiles.mint(into: harness.directory + "/fake-pki")
        let pipeline = try await Pipeline.start(
            verifiers: 1,
            fakeArguments: [
                "--latency-ms", "5", "--signing-key", minted.path(FakePKIFiles.signingKeyFile), "--signing-chain",
                minted.path(FakePKIFiles.chainFile), "--notification-retry-seconds", "2,2,2,2,2,2,2,2,2,2",
            ],
            verifierSettings: ["APPLE_ROOT_CERTIFICATES": minted.path(FakePKIFiles.rootFile)])
        try harness.collectEvents(pipeline)
        // The ingest answers 503 two seconds after Kafka stops acknowledging (instead of ten).
        let ingest = try await ServiceProcess.start(
            .ingest,
            environment: pipeline.kafka.environment.merging(Pipeline.topics) { $1 }
                .merging(["INGEST_KAFKA_DELIVERY_TIMEOUT_MS": "2000"]) { $1 })

        pipeline.kafka.process.send(signal: SIGSTOP)
        let target = ingest.url("/v1/apple/notifications")
        let sent = try await TestHTTPClient.send(
            "POST",
            pipeline.fake.url + "/admin/notifications/send?type=REFUND&transaction_id=2000000000000123"
                + "&revocation_percentage=50000&url="
                + (target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target),
            timeout: 30)
        let answer = try #require(sent.jsonObject, "\(sent.status): \(sent.text)")
        let uuid = try #require(answer["notification_uuid"] as? String)
        let first = try #require(answer["first_attempt"] as? [String: Any])
        #expect(answer["delivered"] as? Bool == false)
        #expect(first["http_status"] as? Int == 503, "the ingest must refuse while Kafka cannot acknowledge: \(first)")

        try await Task.sleep(for: .seconds(3))
        pipeline.kafka.process.send(signal: SIGCONT)
        // The fake retries like Apple until the ingest answers 200, then the verifier writes the event.
        #expect(await harness.waitForEvents([uuid], timeout: .seconds(90)))
        let history = try await TestHTTPClient.send("GET", pipeline.fake.url + "/admin/notifications?uuid=" + uuid)
        let entry = try #require((history.jsonObject?["notifications"] as? [[String: Any]])?.first)
        let attempts = try #require(entry["attempts"] as? [[String: Any]])
        #expect(entry["delivered"] as? Bool == true)
        #expect(attempts.first?["http_status"] as? Int == 503 && attempts.last?["http_status"] as? Int == 200)

        try await Task.sleep(for: .seconds(2))  // a copy the frozen broker kept would show now
        let events = try harness.writtenEvents()
        #expect(Set(events.map(\.eventId)) == [uuid], "one logical event")
        #expect(events.allSatisfy { $0 == events[0] })
        #expect(events.first?.type == .debit && events.first?.transaction?.revocationPercentage == 50_000)
        #expect(events.first?.transaction?.creditKey == "apple:production:2000000000000123")
        #expect(await ingest.stop() == 0)
        await finish(pipeline, harness)
    }
}
