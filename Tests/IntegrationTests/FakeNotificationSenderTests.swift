import Crypto
import FakeAppStore
import Foundation
import SignedData
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
        // A production notification sent after it to the same place is retried on the schedule: once its last retry
        // was made, any retry of the sandbox one (due earlier) would have been made too.
        let production = try await TestHTTPClient.send(
            "POST", sender.url + "/admin/notifications/send?type=TEST&url=http%3A%2F%2F127.0.0.1%3A9%2Fnowhere")
        let productionUUID = try #require(production.jsonObject?["notification_uuid"] as? String)
        #expect(production.jsonObject?["retries_left"] as? Int == 2)
        #expect(await eventually(timeout: .seconds(15)) {
            (try? await attempts(sender, uuid: productionUUID).results.count) == 3
        })
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

    @Test func theCommandSignsWithMintedKeysWhatAVerifierTrustingTheirRootAccepts() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let minted = try FakePKIFiles.mint(into: directory)
        // The receiver keeps what it is posted as a Get Notification History entry (the body Apple posts is the
        // entry's shape: {"signedPayload": ...}); reading it back shows exactly what the command sent.
        let receiver = try await FakeAppStoreProcess.start(arguments: minted.fakeArguments)
        let command = try ManagedProcess(
            executable: try TestBinaries.path("fake-appstore"),
            arguments: [
                "send-notification", "--signing-key", minted.path(FakePKIFiles.signingKeyFile), "--signing-chain",
                minted.path(FakePKIFiles.chainFile), "--url", receiver.url + "/admin/notification-history", "--type",
                "DID_RENEW", "--subtype", "BILLING_RECOVERY", "--transaction-id", "2000000000000555",
                "--retry-schedule-seconds", "none",
            ])
        #expect(await command.waitForExit(timeout: .seconds(20)) == 0, "\(command.stderrTail())")
        let summary = try #require(
            command.stdoutLines.last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) }
                as? [String: Any])
        #expect(summary["delivered"] as? Bool == true && summary["attempts"] as? Int == 1)
        #expect(summary["notification_type"] as? String == "DID_RENEW")
        #expect(summary["subtype"] as? String == "BILLING_RECOVERY")

        let credentials = try AppStoreServerAPICredentials(
            issuerId: minted.issuerId, keyId: minted.keyId, privateKeyPath: minted.path(FakePKIFiles.apiKeyFile))
        let token = try AppStoreServerAPITokenProvider(credentials: credentials).token(bundleId: "com.example.game")
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let history = try await TestHTTPClient.send(
            "POST", receiver.url + "/inApps/v1/notifications/history",
            headers: ["Authorization": token.authorizationHeader, "Content-Type": "application/json"],
            body: Data(#"{"startDate":\#(now - 600_000),"endDate":\#(now + 60_000)}"#.utf8))
        #expect(history.status == 200, "\(history.text)")
        let items = try #require(history.jsonObject?["notificationHistory"] as? [[String: Any]])
        let signed = try #require(items.first?["signedPayload"] as? String)
        let root = try Certificate.load(path: minted.path(FakePKIFiles.rootFile))
        let verified = try AppleSignedDataVerifier(trustedRoots: root).verify(
            signed, as: NotificationPayload.self) { $0.signedDate }
        #expect(verified.payload.notificationType == .didRenew && verified.payload.subtype == .billingRecovery)
        #expect(verified.payload.notificationUUID == summary["notification_uuid"] as? String)
        let transaction = try AppleSignedDataVerifier(trustedRoots: root).verify(
            try #require(verified.payload.data?.signedTransactionInfo), as: JWSTransactionPayload.self) {
                $0.signedDate
            }
        #expect(transaction.payload.transactionId == "2000000000000555")

        let bad = try ManagedProcess(
            executable: try TestBinaries.path("fake-appstore"), arguments: ["send-notification", "--type", "TEST"])
        #expect(await bad.waitForExit(timeout: .seconds(10)) == 2)
        #expect(bad.stderrLines.joined().contains("url is required"))
        await receiver.stop()
    }
}
