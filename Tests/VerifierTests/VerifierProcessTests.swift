import Foundation
import TestSupport
import Testing

/// The real executable: arguments, settings errors, endpoints and SIGTERM. Quick (a few seconds, mostly the mock
/// cluster's first group join); the pipeline scenarios live in IntegrationTests.
@Suite("receipt-verifier process", .serialized)
struct VerifierProcessTests {
    @Test func helpDocumentsTheSettingsAndExitsZero() async throws {
        let process = try ManagedProcess(executable: try TestBinaries.path("receipt-verifier"), arguments: ["--help"])
        #expect(await process.waitForExit(timeout: .seconds(10)) == 0)
        let text = process.stdoutLines.joined(separator: "\n")
        #expect(text.contains("VERIFIER_MAX_IN_FLIGHT") && text.contains("ALLOWED_BUNDLE_IDS"))
    }

    @Test func aMissingRequiredSettingIsNamedAndExitsTwo() async throws {
        let process = try ManagedProcess(
            executable: try TestBinaries.path("receipt-verifier"),
            environment: ["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "ALLOWED_BUNDLE_IDS": ""])
        #expect(await process.waitForExit(timeout: .seconds(10)) == 2)
        #expect(
            process.stderrLines.contains { $0.contains("\"level\":\"error\"") && $0.contains("ALLOWED_BUNDLE_IDS") })
    }

    @Test("a KAFKA_* property librdkafka refuses is a settings error: exit 2, as the ingest's")
    func aRefusedKafkaPropertyExitsTwo() async throws {
        let process = try ManagedProcess(
            executable: try TestBinaries.path("receipt-verifier"),
            environment: [
                "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "ALLOWED_BUNDLE_IDS": "com.example.game",
                "KAFKA_NO_SUCH_PROPERTY": "1",
            ])
        #expect(await process.waitForExit(timeout: .seconds(10)) == 2)
        #expect(process.stderrLines.contains { $0.contains("cannot start") && $0.contains("no.such.property") })
    }

    @Test func servesHealthAndMetricsThenDrainsOnSIGTERMAndExitsZero() async throws {
        let kafka = try await EmbeddedKafkaProcess.start(topics: [
            ("iap.receipts.submitted", 2), ("iap.receipts.retry", 2), ("iap.receipts.results", 2),
            ("iap.receipts.dlq", 2), ("iap.notifications.submitted", 2), ("iap.purchase.events", 2),
        ])
        let fake = try await FakeAppStoreProcess.start()
        var environment = kafka.environment.merging(fake.environment) { $1 }
        environment["ALLOWED_BUNDLE_IDS"] = "com.example.game"
        environment["KAFKA_SESSION_TIMEOUT_MS"] = "6000"
        let verifier = try await ServiceProcess.start(.verifier, environment: environment)
        _ = try await verifier.process.waitForStderrLine(timeout: .seconds(20)) {
            $0.contains("\"logger\":\"receipt-verifier\"") && $0.contains("\"msg\":\"partitions assigned\"")
        }

        #expect(try await TestHTTPClient.send("GET", verifier.url("/healthz")).status == 200)
        #expect(try await TestHTTPClient.send("POST", verifier.url("/healthz")).status == 405)
        #expect(try await TestHTTPClient.send("GET", verifier.url("/nowhere")).status == 404)
        let metrics = try await TestHTTPClient.send("GET", verifier.url("/metrics")).text
        for name in [
            "verifier_results_total", "verifier_dlq_records_total", "verifier_apple_round_duration_seconds_bucket",
            "verifier_apple_in_flight", "verifier_paused_partitions", "verifier_breaker_open",
            "verifier_rebalances_total",
            "verifier_retries_total", "kafka_consumer_assigned_partitions", "verifier_notification_events_total",
            "verifier_notification_rejections_total", "verifier_notification_to_event_seconds_bucket",
        ] {
            #expect(metrics.contains(name), "\(name) missing from /metrics")
        }
        // Submissions, retry records and notifications: two partitions each.
        #expect(await verifier.metricSum("verifier_assigned_partitions") == 6)

        #expect(await verifier.stop() == 0)
        #expect(verifier.process.stderrLines.contains { $0.contains("\"msg\":\"receipt-verifier stopped\"") })
        _ = await fake.process.terminate()
        _ = await kafka.stop()
    }
}
