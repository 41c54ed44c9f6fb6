import AppStore
import FakeAppStore
import Foundation
import Kafka
@testable import Notifications
import ReceiptModel
import ServiceSupport
import SignedData
import Testing

import TestPKI
@testable import Verifier

/// A minted App Store-shaped PKI and the notifications the fake App Store would sign with it.
struct NotificationSamples: Sendable {
    static let bundleId = "com.example.game"
    static let appAppleId: Int64 = 1_234_567_890
    static let notifications = TopicPartition(topic: "notifications", partition: 0)
    static let topics = TopicNames(
        receipts: "receipts", results: "results", retry: "retry", deadLetter: "dlq", notifications: "notifications",
        events: "events")

    let pki: TestSigningPKI

    init() throws {
        pki = try TestSigningPKI.mint()
    }

    func processor(
        sandboxPolicy: SandboxPolicy = .accept, appAppleId: Int64? = NotificationSamples.appAppleId,
        allowed: Set<String> = [NotificationSamples.bundleId], revocation: RevocationChecker? = nil
    ) -> NotificationProcessor {
        NotificationProcessor(
            verifier: AppleSignedDataVerifier(trustedRoots: [pki.rootCertificate], revocation: revocation),
            policy: NotificationPolicy(allowedBundleIds: allowed, sandboxPolicy: sandboxPolicy, appAppleId: appAppleId))
    }

    /// A notification of `type` as the fake App Store shapes it, signed at the PKI's reference time.
    func notification(
        _ type: String, subtype: String? = nil, configure: (inout FakeNotification.Options) -> Void = { _ in }
    ) -> FakeNotification {
        var options = FakeNotification.Options()
        options.signedDateMs = pki.signedDateMs
        configure(&options)
        return FakeNotification.make(type: type, subtype: subtype, options: options)
    }

    /// The `NOTIFICATIONS_TOPIC` record of `notification`, signed with this PKI (or `defect` on the outer JWS).
    func record(_ notification: FakeNotification, defect: TestSigningPKI.Defect? = nil) throws -> [UInt8] {
        let signed: String
        if let defect {
            let transaction = try notification.transaction.map { try pki.signer.sign(payload: $0.json) }
            let renewal = try notification.renewal.map { try pki.signer.sign(payload: $0.json) }
            signed = try pki.sign(
                payload: notification.payloadJSON(signedTransactionInfo: transaction, signedRenewalInfo: renewal),
                defect: defect)
        } else {
            signed = try notification.signedPayload(signer: pki.signer)
        }
        return try Self.record(signedPayload: signed)
    }

    static func record(signedPayload: String, receivedAtMs: Int64 = 1_764_489_600_000) throws -> [UInt8] {
        try MessageCoding.encode(NotificationRecord(signedPayload: signedPayload, receivedAtMs: receivedAtMs))
    }

    /// A revocation checker asking `responder` (this PKI's, by default answering `good`), with no pause after a
    /// failed fetch, so a retry asks again at once.
    func revocationChecker(_ responder: TestOCSPResponder) -> RevocationChecker {
        RevocationChecker(
            trustedRoots: [pki.rootCertificate], transport: responder,
            configuration: RevocationChecker.Configuration(responderURL: "http://ocsp.test/", retryIntervalSeconds: 0))
    }

    static func message(_ value: [UInt8], offset: Int64, key: String? = "k") -> KafkaMessage {
        KafkaMessage(partition: notifications, offset: offset, key: key.map { Array($0.utf8) }, value: value)
    }
}

extension Result where Success == NotificationEvent, Failure == NotificationRejection {
    /// The event, failing the test (with the rejection) when there is none.
    func event(sourceLocation: SourceLocation = #_sourceLocation) throws -> PurchaseEvent {
        switch self {
        case .success(let notification): return notification.event
        case .failure(let rejection):
            Issue.record("expected an event, got \(rejection)", sourceLocation: sourceLocation)
            throw rejection
        }
    }

    /// The rejection, failing the test when an event was made.
    func rejection(sourceLocation: SourceLocation = #_sourceLocation) -> NotificationRejection? {
        switch self {
        case .success(let notification):
            Issue.record(
                "expected a DLQ record, got a \(notification.event.type) event", sourceLocation: sourceLocation)
            return nil
        case .failure(let rejection): return rejection
        }
    }
}
