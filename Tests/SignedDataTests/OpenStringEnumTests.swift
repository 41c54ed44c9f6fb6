import Foundation
import SignedData
import Testing

/// The seven string fields Apple may add values to share one definition (`OpenStringEnum`): each keeps what it
/// reads, known or not, compares by it and prints as it.
@Suite("Open string enums")
struct OpenStringEnumTests {
    static func roundTrip<Value: OpenStringEnum>(_ known: Value, _ type: Value.Type) throws {
        let decoded = try JSONDecoder().decode([Value].self, from: Data("[\"\(known.rawValue)\", \"NEW_IN_2027\"]".utf8))
        #expect(decoded == [known, Value(rawValue: "NEW_IN_2027")])
        #expect(decoded.map(\.description) == [known.rawValue, "NEW_IN_2027"])
        #expect("\(decoded[1])" == "NEW_IN_2027")
        #expect(Set(decoded).count == 2 && Set(decoded + [known]).count == 2)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Value].self, from: Data("[1]".utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Value].self, from: Data("[null]".utf8)) }
    }

    @Test("each decodes a JSON string, keeps an unknown value, compares and prints by its raw value")
    func everyField() throws {
        try Self.roundTrip(NotificationType.refund, NotificationType.self)
        try Self.roundTrip(NotificationSubtype.voluntary, NotificationSubtype.self)
        try Self.roundTrip(ProductType.autoRenewableSubscription, ProductType.self)
        try Self.roundTrip(OwnershipType.familyShared, OwnershipType.self)
        try Self.roundTrip(RevocationType.refundProrated, RevocationType.self)
        try Self.roundTrip(SignedEnvironment.sandbox, SignedEnvironment.self)
        try Self.roundTrip(TransactionReason.renewal, TransactionReason.self)
        #expect(ProductType.autoRenewableSubscription.rawValue == "Auto-Renewable Subscription")
        #expect(SignedEnvironment(rawValue: "Sandbox") == .sandbox)
    }
}
