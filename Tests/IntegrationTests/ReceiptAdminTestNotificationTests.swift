import FakeAppStore
import Foundation
import ReceiptModel
import Testing

import TestSupport

/// The last step of the deploy path, end to end as processes: `receipt-admin test-notification` asks the fake App
/// Store for a test notification, which it signs and POSTs to the notification URL (the real receipt-ingest);
/// the receipt-verifier turns it into a `test` event on the events topic, and the tool reports the delivery.
@Suite(.serialized) struct ReceiptAdminTestNotificationTests {
    @Test func aTestNotificationReachesTheIngestAndItsTestEventTheEventsTopic() async throws {
        let harness = try NotificationHarness()
        let minted = try FakePKIFiles.mint(into: harness.directory + "/fake-pki")
        let pipeline = try await Pipeline.start(
            verifiers: 1, fakeArguments: ["--latency-ms", "5"] + minted.fakeArguments, withIngest: true,
            verifierSettings: ["APPLE_ROOT_CERTIFICATES": minted.path(FakePKIFiles.rootFile)])
        try harness.collectEvents(pipeline)
        let ingest = try #require(pipeline.ingest)
        // App Store Connect's notification URL for this deployment.
        let target = ingest.url("/v1/apple/notifications")
        let configured = try await TestHTTPClient.send(
            "POST", pipeline.fake.url + "/admin/notification-url?url="
                + (target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target))
        #expect(configured.status == 200)

        let admin = try await ToolRun.run(
            try TestBinaries.path("receipt-admin"), arguments: ["test-notification", "--json", "--wait-seconds", "30"],
            environment: minted.verifierSettings.merging(pipeline.fake.environment) { $1 }.merging([
                "ALLOWED_BUNDLE_IDS": "com.example.game"
            ]) { $1 }, timeout: .seconds(90))
        #expect(admin.status == 0, "\(admin.stdout) \(admin.stderr)")
        let report = try #require(admin.lastJSONObject, "\(admin.stdout) \(admin.stderr)")
        #expect(report["delivered"] as? Bool == true && report["notification_type"] as? String == "TEST")
        let uuid = try #require(report["notification_uuid"] as? String)

        #expect(await harness.waitForEvents([uuid], timeout: .seconds(60)))
        let events = try harness.writtenEvents().filter { $0.eventId == uuid }
        #expect(!events.isEmpty && events.allSatisfy { $0.type == .test }, "\(events.map(\.type))")
        await pipeline.shutdown()
        harness.close()
    }
}
