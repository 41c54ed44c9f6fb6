import Foundation
import ReceiptModel
import Testing

/// What the verifier writes for App Store notifications validates against `schemas/` (the independent validator).
@Suite("schemas/ match what the verifier writes for notifications")
struct NotificationSchemaTests {
    @Test("a notification's DLQ record and its purchase events validate; a wrong event type does not")
    func notificationOutputs() throws {
        let record = NotificationRecord(signedPayload: "eyJh.eyJi.c2ln", receivedAtMs: 1, origin: .notificationHistory)
        var cases: [SchemaValidator.Case] = [
            .init(schema: "notification.schema.json", instance: try Self.text(record))
        ]
        for reason in [Reason.invalidSignature, .bundleMismatch, .sandboxNotAllowed, .malformedSubmission] {
            let dead = DeadLetterRecord(
                submissionId: nil, reason: reason, message: "signedPayload does not verify",
                sourceTopic: "iap.notifications.submitted", sourcePartition: 3, sourceOffset: 12,
                originalKey: Array("2000000000000001".utf8), originalValue: try MessageCoding.encode(record),
                appleStatus: nil, attempts: 0, failedAtMs: 2)
            cases.append(.init(schema: "dlq.schema.json", instance: try Self.text(dead)))
        }
        let transaction = VerifiedTransaction(
            TransactionFields(
                transactionId: "2000000000000123", originalTransactionId: "2000000000000001", productId: "gems",
                quantity: 1, purchaseDateMs: 1, inAppOwnershipType: "FAMILY_SHARED", productType: .nonConsumable,
                revocationType: "FAMILY_REVOKE"),
            creditable: false, environment: .production)
        for type in PurchaseEventType.allCases {
            let event = PurchaseEvent(
                eventId: "e-\(type.rawValue)", type: type, notificationType: "X", subtype: nil,
                environment: .production, bundleId: "com.example.game", appAppleId: 1, transaction: transaction,
                renewal: nil, subscriptionStatus: 5, familyShared: true, signedDateMs: 1, receivedAtMs: 2)
            cases.append(.init(schema: "event.schema.json", instance: Self.text(event)))
        }
        for (index, errors) in try SchemaValidator.errors(cases).enumerated() {
            #expect(errors.isEmpty, "\(cases[index].schema): \(errors) in \(cases[index].instance)")
        }
        let event = try #require(cases.last?.instance)
        let renamed = event.replacingOccurrences(of: "\"type\":\"info\"", with: "\"type\":\"refund\"")
        #expect(renamed != event)
        let wrong = SchemaValidator.Case(schema: "event.schema.json", instance: renamed)
        #expect(try SchemaValidator.errors([wrong]).first?.isEmpty == false)
    }

    private static func text<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try MessageCoding.encode(value), as: UTF8.self)
    }

    /// Results and events as their one writer writes them.
    private static func text(_ result: VerificationResult) -> String {
        String(decoding: VerificationResultJSON.encode(result), as: UTF8.self)
    }

    private static func text(_ event: PurchaseEvent) -> String {
        String(decoding: PurchaseEventJSON.encode(event), as: UTF8.self)
    }
}
