import Crypto
import FakeAppStore
import Foundation
import Testing

import TestSupport

/// The fake App Store as Apple's notification sender, as processes: retries on the schedule until the receiver
/// answers 2xx, Sandbox sent once, and the command sharing the server's signing keys.
@Suite(.serialized) struct FakeNotificationSenderTests {
    private func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "fake-notifications-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func attempts(_ fake: FakeAppStoreProcess, uuid: String) async throws
        -> (delivered: Bool, results: [String])
    {
        let response = try await TestHTTPClient.send("GET", fake.url + "/admin/notifications?uuid=" + uuid)
        let list = try #require(response.jsonObject?["notifications"] as? [[String: Any]])
        let entry = try #require(list.first, "no notification \(uuid)")
        let attempts = try #require(entry["attempts"] as? [[String: Any]])
        return (entry["delivered"] as? Bool == true, attempts.compactMap { $0["result"] as? String })
    }

    @Test func aFailedDeliveryIsRetriedOnTheScheduleUntilTheReceiverAnswers() async throws {
        let sender = try await FakeAppStoreProcess.start(arguments: ["--notification-retry-seconds", "1,1,1,1,1"])
        // A receiver that is down at first: start one to learn a free port, then stop it.
        let first = try await FakeAppStoreProcess.start()
        let port = try #require(URL(string: first.url)?.port)
        await first.stop()

        let target = "http://127.0.0.1:\(port)/admin/reset"
        let response = try await TestHTTPClient.send(
            "POST", sender.url + "/admin/notifications/send?type=REFUND&transaction_id=2000000000000042&url="
                + (target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target))
        #expect(response.status == 200, "\(response.text)")
        let sent = try #require(response.jsonObject)
        let uuid = try #require(sent["notification_uuid"] as? String)
        #expect(sent["delivered"] as? Bool == false && sent["retries_left"] as? Int == 5)
        #expect((sent["first_attempt"] as? [String: Any])?["result"] as? String == "SOCKET_ISSUE")
        #expect(sent["transaction_id"] as? String == "2000000000000042")

        // The receiver comes back; a later attempt of the schedule reaches it.
        let receiver = try await FakeAppStoreProcess.start(arguments: ["--port", String(port)])
        let delivered = await eventually(timeout: .seconds(15)) {
            (try? await attempts(sender, uuid: uuid).delivered) == true
        }
        #expect(delivered)
        let results = try await attempts(sender, uuid: uuid).results
        #expect(results.first == "SOCKET_ISSUE" && results.last == "SUCCESS" && results.count >= 2)
        #expect(results.filter { $0 == "SUCCESS" }.count == 1, "no attempt after the success: \(results)")
        await receiver.stop()
        await sender.stop()
    }

    @Test func aSandboxNotificationIsSentOnceAsApple() async throws {
        let sender = try await FakeAppStoreProcess.start(arguments: ["--notification-retry-seconds", "0.2,0.2"])
        let response = try await TestHTTPClient.send(
            "POST", sender.url + "/admin/notifications/send?type=TEST&environment=Sandbox&url="
                + "http%3A%2F%2F127.0.0.1%3A9%2Fnowhere")
        let uuid = try #require(response.jsonObject?["notification_uuid"] as? String)
        #expect(response.jsonObject?["retries_left"] as? Int == 0)
        try await Task.sleep(for: .seconds(1))
        let state = try await attempts(sender, uuid: uuid)
        #expect(!state.delivered && state.results.count == 1)
        await sender.stop()
    }

    @Test func aBadSendRequestIsRefusedNamingTheParameter() async throws {
        let sender = try await FakeAppStoreProcess.start()
        let missingType = try await TestHTTPClient.send(
            "POST", sender.url + "/admin/notifications/send?url=http%3A%2F%2Fx")
        #expect(missingType.status == 400 && missingType.text.contains("type is required"))
        let badPercentage = try await TestHTTPClient.send(
            "POST", sender.url + "/admin/notifications/send?type=REFUND&url=http%3A%2F%2Fx&revocation_percentage=x")
        #expect(badPercentage.status == 400 && badPercentage.text.contains("revocation_percentage"))
        await sender.stop()
    }

    @Test func theCommandSignsWithTheKeysTheServerServes() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try await FakeAppStoreProcess.start(arguments: ["--signing-dir", directory])
        let rootLine = server.process.stdoutLines.first { $0.hasPrefix("FAKE_APPSTORE_ROOT_CERTIFICATE=") }
        #expect(rootLine == "FAKE_APPSTORE_ROOT_CERTIFICATE=\(directory)/apple-root.pem")
        let served = try await TestHTTPClient.send("GET", server.url + "/admin/signing/root").text

        let command = try ManagedProcess(
            executable: try TestBinaries.path("fake-appstore"),
            arguments: [
                "send-notification", "--signing-dir", directory, "--url", server.url + "/admin/reset", "--type",
                "DID_RENEW", "--subtype", "BILLING_RECOVERY", "--retry-schedule-seconds", "none",
            ])
        #expect(await command.waitForExit(timeout: .seconds(20)) == 0, "\(command.stderrTail())")
        let summary = try #require(
            command.stdoutLines.last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) }
                as? [String: Any])
        #expect(summary["delivered"] as? Bool == true && summary["attempts"] as? Int == 1)
        #expect(summary["notification_type"] as? String == "DID_RENEW")
        #expect(summary["subtype"] as? String == "BILLING_RECOVERY")
        let root = try String(contentsOfFile: directory + "/apple-root.pem", encoding: .utf8)
        #expect(root == served)
        let stored = try #require(try Certificate.load(path: directory + "/apple-root.pem").first)
        #expect(stored.isSelfIssued)

        let bad = try ManagedProcess(
            executable: try TestBinaries.path("fake-appstore"), arguments: ["send-notification", "--type", "TEST"])
        #expect(await bad.waitForExit(timeout: .seconds(10)) == 2)
        #expect(bad.stderrLines.joined().contains("url is required"))
        await server.stop()
    }
}
