import Foundation
@testable import Notifications
import ServiceSupport
import SignedData
import Testing

import TestPKI
@testable import Verifier

@Suite("VerifierSettings for notifications")
struct NotificationSettingsTests {
    let minimal = ["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092", "ALLOWED_BUNDLE_IDS": "com.example.game"]

    @Test func defaultsFollowTheContract() throws {
        let settings = try VerifierSettings.fromEnvironment(minimal)
        #expect(settings.topics.notifications == "iap.notifications.submitted")
        #expect(settings.topics.events == "iap.purchase.events")
        #expect(settings.serverAPI.appAppleId == nil)
        // The shipped Apple Root CA - G3, and nothing else.
        #expect(settings.serverAPI.rootCertificatePaths.count == 1)
        #expect(settings.serverAPI.rootCertificatePaths.first?.hasSuffix("/certificates/AppleRootCA-G3.cer") == true)
        let roots = try AppleRootCertificates.load(paths: settings.serverAPI.rootCertificatePaths)
        #expect(roots.map(\.subject).contains { $0.contains("Apple Root CA - G3") })
        #expect(settings.notificationPolicy.allowedBundleIds == ["com.example.game"])
        #expect(settings.notificationPolicy.sandboxPolicy == .accept)
    }

    @Test func theNotificationSettingsAreRead() throws {
        let directory = NSTemporaryDirectory() + "notification-settings-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pki = try TestSigningPKI.mint()
        let rootPath = directory + "/root.pem"
        try Data(pki.rootCertificate.pem.utf8).write(to: URL(fileURLWithPath: rootPath))
        var environment = minimal
        environment["NOTIFICATIONS_TOPIC"] = "n"
        environment["EVENTS_TOPIC"] = "e"
        environment["APPLE_APP_APPLE_ID"] = "1234567890"
        environment["APPLE_ROOT_CERTIFICATES"] = " \(rootPath) ,"
        environment["SANDBOX_POLICY"] = "reject"
        let settings = try VerifierSettings.fromEnvironment(environment)
        #expect(settings.topics.notifications == "n" && settings.topics.events == "e")
        #expect(settings.serverAPI.rootCertificatePaths == [rootPath])
        #expect(
            settings.notificationPolicy
                == NotificationPolicy(
                    allowedBundleIds: ["com.example.game"], sandboxPolicy: .reject, appAppleId: 1_234_567_890))
    }

    @Test func invalidValuesAreNamed() throws {
        let cases: [(String, String, String)] = [
            ("APPLE_APP_APPLE_ID", "com.example.game", "APPLE_APP_APPLE_ID"),
            ("APPLE_APP_APPLE_ID", "-5", "APPLE_APP_APPLE_ID"),
            ("APPLE_ROOT_CERTIFICATES", "/nonexistent/root.cer", "APPLE_ROOT_CERTIFICATES"),
            ("APPLE_ROOT_CERTIFICATES", " , ", "APPLE_ROOT_CERTIFICATES"),
            ("NOTIFICATIONS_TOPIC", "iap.receipts.results", "RETRY_TOPIC"),
            ("EVENTS_TOPIC", "iap.receipts.dlq", "RETRY_TOPIC"),
            ("EVENTS_TOPIC", "no spaces", "EVENTS_TOPIC"),
        ]
        for (name, value, named) in cases {
            var environment = minimal
            environment[name] = value
            #expect(throws: ConfigurationError.self, "\(name)=\(value)") {
                try VerifierSettings.fromEnvironment(environment)
            }
            do {
                _ = try VerifierSettings.fromEnvironment(environment)
            } catch {
                #expect(error.variable == named, "\(name)=\(value): \(error.description)")
            }
        }
    }
}
