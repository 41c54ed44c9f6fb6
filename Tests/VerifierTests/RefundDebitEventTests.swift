import AppStore
import FakeAppStore
import Foundation
@testable import Notifications
import ReceiptModel
import SignedData
import Testing

import TestPKI
@testable import Verifier

/// The debit `receipt-reconcile` makes up for a refund found in Get Refund History is the event the verifier
/// publishes for that refund's `REFUND` notification, but for its id and its time (Apple's `revocationDate`), and a
/// refunded transaction is checked like any signed data before.
@Suite struct RefundDebitEventTests {
    let samples: NotificationSamples

    init() throws {
        samples = try NotificationSamples()
    }

    var events: RefundDebitEvent {
        RefundDebitEvent(
            verifier: samples.pki.verifier(),
            policy: NotificationPolicy(
                allowedBundleIds: [NotificationSamples.bundleId], appAppleId: NotificationSamples.appAppleId))
    }

    func signedTransaction(_ notification: FakeNotification, signer: JWSSigner? = nil) throws -> String {
        let transaction = try #require(notification.transaction)
        return try (signer ?? samples.pki.signer).sign(payload: transaction.json)
    }

    @Test(arguments: [nil, 50_000])
    func theMadeUpDebitIsTheRefundNotificationsEvent(percentage: Int?) throws {
        let notification = samples.notification("REFUND") {
            $0.transactionId = "2000000000000042"
            $0.revocationPercentage = percentage
        }
        let fromNotification = try samples.processor().process(try samples.record(notification)).event()
        let refund = try events.refund(try signedTransaction(notification), environment: .production).get()
        let revocation = try #require(notification.transaction?.revocationDateMs)
        #expect(refund.revocationDateMs == revocation && refund.creditKey == "apple:production:2000000000000042")
        let id = "reconcile:refund:2000000000000042:\(revocation)"
        let made = events.event(refund, eventId: id, environment: .production, receivedAtMs: fromNotification.receivedAtMs)

        var expected = fromNotification
        expected.eventId = id
        expected.signedDateMs = revocation
        // What only a notification carries (its data.status and renewal info): a refund history has neither.
        expected.subscriptionStatus = nil
        expected.renewal = nil
        #expect(made.event == expected)
        #expect(made.event.type == .debit && made.event.notificationType == "REFUND")
        #expect(made.event.transaction?.revocationPercentage == percentage)
        #expect(made.key == Array("2000000000000042".utf8))
        // Written by the verifier's own event writer: it reads back as the event.
        #expect(try MessageCoding.decode(PurchaseEvent.self, from: made.value) == made.event)
    }

    @Test func aTransactionSignedUnderAnotherRootIsRefused() throws {
        let notification = samples.notification("REFUND") { $0.transactionId = "2000000000000043" }
        let other = try TestSigningPKI.mint()
        let result = events.refund(try signedTransaction(notification, signer: other.signer), environment: .production)
        #expect(result.failure?.reason == .invalidSignature)
    }

    @Test func anotherAppsTransactionIsRefused() throws {
        let notification = samples.notification("REFUND") {
            $0.transactionId = "2000000000000044"
            $0.bundleId = "com.example.other"
        }
        let result = events.refund(try signedTransaction(notification), environment: .production)
        #expect(result.failure?.reason == .bundleMismatch)
    }

    @Test func aTransactionNotRevokedOrOfTheOtherEnvironmentIsRefused() throws {
        let purchase = samples.notification("ONE_TIME_CHARGE") { $0.transactionId = "2000000000000045" }
        #expect(events.refund(try signedTransaction(purchase), environment: .production).failure?.reason == .malformedSubmission)
        let refund = samples.notification("REFUND") { $0.transactionId = "2000000000000046" }
        #expect(events.refund(try signedTransaction(refund), environment: .sandbox).failure?.reason == .malformedSubmission)
    }
}

fileprivate extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
