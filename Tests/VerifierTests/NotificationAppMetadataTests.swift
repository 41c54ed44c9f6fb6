import Foundation
@testable import Notifications
import SignedData
import Testing

@testable import Verifier

/// `appAppleId` kept in a notification's loosely read parts (`appData` here): a whole number, exactly even past 2^53,
/// or its decimal text; a fraction is no id.
@Suite struct NotificationAppMetadataTests {
    static func appAppleId(_ json: String) throws -> Int64? {
        let payload = try SignedPayloadDecoder.decode(
            NotificationPayload.self,
            from: Array(#"{"notificationType":"RESCIND_CONSENT","appData":{"appAppleId":\#(json)}}"#.utf8))
        return NotificationAppMetadata(payload).appAppleId
    }

    @Test func aWholeNumberOrItsTextIsTheId() throws {
        #expect(try Self.appAppleId("1234567890") == 1_234_567_890)
        #expect(try Self.appAppleId("9007199254740993") == 9_007_199_254_740_993)
        #expect(try Self.appAppleId("1234567890.0") == 1_234_567_890)
        #expect(try Self.appAppleId(#""1234567890""#) == 1_234_567_890)
        #expect(try Self.appAppleId("1.5") == nil)
        #expect(try Self.appAppleId("true") == nil)
    }

    /// Issue 41 item 5: Apple's library test notifications (`AppStoreTests/Fixtures/apple-app-store-server-library`,
    /// MIT, see its README) give the app's environment, bundle and app id from wherever their type keeps them, as
    /// Apple's tests expect (`test_notification_decoding`, `test_summary_notification_decoding`,
    /// `test_rescind_consent_notification_decoding`, `test_external_purchase_token_notification_decoding` and its
    /// sandbox twin: no environment member, a `SANDBOX` id prefix is the sandbox).
    @Test(arguments: [
        ("signedNotification.json", "LocalTesting", 41_234),
        ("signedConsumptionRequestNotification.json", "LocalTesting", 41_234),
        ("signedSummaryNotification.json", "LocalTesting", 41_234),
        ("signedRescindConsentNotification.json", "LocalTesting", 41_234),
        ("signedExternalPurchaseTokenNotification.json", "Production", 55_555),
        ("signedExternalPurchaseTokenSandboxNotification.json", "Sandbox", 55_555),
    ])
    func applesTestNotifications(_ file: String, environment: String, appAppleId: Int64) throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("AppStoreTests/Fixtures/apple-app-store-server-library/models/\(file)")
        let payload = try SignedPayloadDecoder.decode(NotificationPayload.self, from: Array(try Data(contentsOf: url)))
        let metadata = NotificationAppMetadata(payload)
        #expect(metadata.environment == environment)
        #expect(metadata.bundleId == "com.example")
        #expect(metadata.appAppleId == appAppleId)
    }
}
