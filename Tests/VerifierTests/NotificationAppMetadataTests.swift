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
}
