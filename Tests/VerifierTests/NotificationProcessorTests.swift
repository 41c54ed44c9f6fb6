import AppStore
import Catalog
import FakeAppStore
import Foundation
@testable import Notifications
import ReceiptModel
import ServiceSupport
import SignedData
import Testing

import TestPKI
@testable import Verifier

/// One row of the contract's mapping (§3.3 of the App Store reference), written independently of the code's table.
struct MappingCase: Sendable, CustomTestStringConvertible {
    let type: String
    let subtype: String?
    let event: PurchaseEventType

    var testDescription: String { "\(type)/\(subtype ?? "-") -> \(event.rawValue)" }

    static let all: [MappingCase] = {
        let rows: [(String, [String?], PurchaseEventType)] = [
            ("ONE_TIME_CHARGE", [nil], .credit),
            ("SUBSCRIBED", ["INITIAL_BUY", "RESUBSCRIBE"], .credit),
            ("DID_RENEW", [nil, "BILLING_RECOVERY"], .credit),
            // Apple: an offer's UPGRADE takes effect at once (a new, charged period); DOWNGRADE at the next renewal.
            ("OFFER_REDEEMED", ["INITIAL_BUY", "RESUBSCRIBE", "UPGRADE", nil], .credit),
            ("OFFER_REDEEMED", ["DOWNGRADE"], .subscriptionStatus),
            ("REFUND", [nil], .debit),
            ("REFUND_REVERSED", [nil], .recredit),
            ("REVOKE", [nil], .revoke),
            (
                "EXPIRED", ["VOLUNTARY", "BILLING_RETRY", "PRICE_INCREASE", "PRODUCT_NOT_FOR_SALE", nil],
                .subscriptionStatus
            ),
            ("DID_FAIL_TO_RENEW", ["GRACE_PERIOD", nil], .subscriptionStatus),
            ("GRACE_PERIOD_EXPIRED", [nil], .subscriptionStatus),
            ("DID_CHANGE_RENEWAL_STATUS", ["AUTO_RENEW_ENABLED", "AUTO_RENEW_DISABLED"], .subscriptionStatus),
            // Apple: an upgrade starts a new, charged period at once (prorated refund of the old one); a downgrade
            // or a cancelled downgrade changes nothing until the next renewal.
            ("DID_CHANGE_RENEWAL_PREF", ["UPGRADE"], .credit),
            ("DID_CHANGE_RENEWAL_PREF", ["DOWNGRADE", nil], .subscriptionStatus),
            ("RENEWAL_EXTENDED", [nil], .subscriptionStatus),
            ("RENEWAL_EXTENSION", ["SUMMARY", "FAILURE"], .subscriptionStatus),
            ("PRICE_INCREASE", ["PENDING", "ACCEPTED"], .subscriptionStatus),
            ("CONSUMPTION_REQUEST", [nil], .consumptionRequest),
            ("TEST", [nil], .test),
            ("REFUND_DECLINED", [nil], .info),
            // External Purchase API tokens: no App Store money, whatever the subtype (2025: ACTIVE_TOKEN_REMINDER,
            // CREATED).
            ("EXTERNAL_PURCHASE_TOKEN", ["UNREPORTED", "ACTIVE_TOKEN_REMINDER", "CREATED"], .info),
            // A parent or guardian withdrew consent (appData, no transaction): an account matter, no money moves.
            ("RESCIND_CONSENT", [nil], .info),
            ("METADATA_UPDATE", [nil], .info),
            ("MIGRATION", [nil], .info),
            ("PRICE_CHANGE", [nil], .info),
        ]
        return rows.flatMap { type, subtypes, event in
            subtypes.map { MappingCase(type: type, subtype: $0, event: event) }
        }
    }()
}

@Suite("NotificationProcessor: verified notifications become the contract's events")
struct NotificationProcessorTests {
    let samples: NotificationSamples

    init() throws {
        samples = try NotificationSamples()
    }

    @Test func theMappingTableCoversEveryTypeAndSubtypeOfTheReference() {
        let covered = Set(MappingCase.all.map { "\($0.type)/\($0.subtype ?? "-")" })
        let reference = Set(FakeNotificationTypes.all.map { "\($0.type)/\($0.subtype ?? "-")" })
        #expect(covered == reference)
        #expect(Set(NotificationEventMapping.table.keys) == Set(MappingCase.all.map(\.type)))
    }

    @Test("each type and subtype, signed and verified, becomes its event", arguments: MappingCase.all)
    func eachTypeAndSubtypeBecomesItsEvent(_ row: MappingCase) throws {
        #expect(NotificationEventMapping.eventType(notificationType: row.type, subtype: row.subtype) == row.event)
        let notification = samples.notification(row.type, subtype: row.subtype)
        let event = try samples.processor().process(try samples.record(notification)).event()
        #expect(event.type == row.event)
        #expect(event.eventId == notification.notificationUUID)
        #expect(event.notificationType == row.type && event.subtype == row.subtype)
        #expect(event.environment == .production && event.bundleId == NotificationSamples.bundleId)
        #expect(event.appAppleId == NotificationSamples.appAppleId)
        #expect(event.signedDateMs == samples.pki.signedDateMs)
        #expect(event.receivedAtMs == 1_764_489_600_000)
        if let transaction = notification.transaction {
            let carried = try #require(event.transaction)
            #expect(carried.transactionId == transaction.transactionId)
            // The purchase: the subscription period, else the original purchase (CONTRACT "Purchase identity").
            let purchase = transaction.webOrderLineItemId.map { "period:\($0)" } ?? transaction.originalTransactionId
            #expect(carried.creditKey == "apple:production:\(purchase)")
        } else {
            #expect(event.transaction == nil)
        }
        #expect((event.renewal != nil) == (notification.renewal != nil))
        #expect(event.subscriptionStatus == notification.status)
    }

    /// Issue 29 item 3: the 2025-26 fields, signed by the test PKI, decoded by the real decoder, carried in the event
    /// with snake_case names; no money rule reads them.
    @Test func theOfferAndCommitmentPlanFieldsOfSignedDataTravelInTheEvent() throws {
        var notification = samples.notification("DID_RENEW")
        notification.transaction?.offerType = 2
        notification.transaction?.offerDiscountType = "PAY_AS_YOU_GO"
        notification.transaction?.offerPeriod = "P3M"
        notification.transaction?.billingPlanType = "MONTHLY"
        notification.transaction?.commitmentInfoJSON = #"{"commitmentPeriod":"P1Y","billingCount":12,"note":"x"}"#
        notification.renewal?.renewalBillingPlanType = "BILLED_UPFRONT"
        let result = samples.processor().process(try samples.record(notification))
        let event = try result.event()
        let transaction = try #require(event.transaction)
        #expect(event.type == .credit && transaction.creditable)
        #expect(transaction.offerDiscountType == "PAY_AS_YOU_GO" && transaction.offerPeriod == "P3M")
        #expect(transaction.billingPlanType == "MONTHLY")
        #expect(
            transaction.commitmentInfo
                == .object(["commitmentPeriod": .string("P1Y"), "billingCount": .integer(12), "note": .string("x")]))
        #expect(event.renewal?.renewalBillingPlanType == "BILLED_UPFRONT")
        // As the engine publishes it.
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(PurchaseEventJSON.encode(event))) as? [String: Any])
        let written = try #require(json["transaction"] as? [String: Any])
        #expect(written["offer_discount_type"] as? String == "PAY_AS_YOU_GO")
        #expect(written["offer_period"] as? String == "P3M")
        #expect(written["billing_plan_type"] as? String == "MONTHLY")
        #expect(((written["commitment_info"] as? [String: Any])?["billingCount"] as? NSNumber)?.intValue == 12)
        #expect((json["renewal"] as? [String: Any])?["renewal_billing_plan_type"] as? String == "BILLED_UPFRONT")
        // Absent in Apple's data: null, never omitted.
        let plain = samples.processor().process(try samples.record(samples.notification("DID_RENEW")))
        let plainJSON = try #require(
            try JSONSerialization.jsonObject(with: Data(PurchaseEventJSON.encode(try plain.event()))) as? [String: Any])
        let plainTransaction = try #require(plainJSON["transaction"] as? [String: Any])
        for name in ["offer_discount_type", "offer_period", "billing_plan_type", "commitment_info"] {
            #expect(plainTransaction[name] is NSNull, "\(name)")
        }
        #expect((plainJSON["renewal"] as? [String: Any])?["renewal_billing_plan_type"] is NSNull)
    }

    /// Issue 29 item 2: `appTransactionId` of the signed transaction and of the renewal info, decoded by the real
    /// decoder, in the event as `app_transaction_id`; null (never omitted) when Apple's data has none.
    @Test func theAppTransactionIdOfSignedDataTravelsInTheEventAndIsNullWhenAbsent() throws {
        var notification = samples.notification("DID_RENEW")
        notification.transaction?.appTransactionId = "705000000000001"
        notification.renewal?.appTransactionId = "705000000000001"
        let event = try samples.processor().process(try samples.record(notification)).event()
        let transaction = try #require(event.transaction)
        #expect(transaction.appTransactionId == "705000000000001" && transaction.creditable)
        #expect(event.renewal?.appTransactionId == "705000000000001")
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(PurchaseEventJSON.encode(event))) as? [String: Any])
        #expect((json["transaction"] as? [String: Any])?["app_transaction_id"] as? String == "705000000000001")
        #expect((json["renewal"] as? [String: Any])?["app_transaction_id"] as? String == "705000000000001")
        let plain = try samples.processor().process(try samples.record(samples.notification("DID_RENEW"))).event()
        #expect(plain.transaction?.appTransactionId == nil)
        #expect(plain.type == event.type && plain.transaction?.creditable == true)
        let plainJSON = try #require(
            try JSONSerialization.jsonObject(with: Data(PurchaseEventJSON.encode(plain))) as? [String: Any])
        #expect((plainJSON["transaction"] as? [String: Any])?["app_transaction_id"] is NSNull)
        #expect((plainJSON["renewal"] as? [String: Any])?["app_transaction_id"] is NSNull)
    }

    /// Issue 41 item 9: what crediting and support need from Apple's signed data reaches the event: the offer and
    /// storefront of the transaction (offer type 5, WWDC26's retention offer, and a type Apple adds later, kept as
    /// they came), the renewal's price, currency and offer, and a consumption request's reason at the top level.
    @Test(arguments: [5, 42])
    func offersStorefrontsRenewalPricesAndConsumptionReasonsReachTheEvent(offerType: Int) throws {
        var notification = samples.notification("CONSUMPTION_REQUEST") {
            $0.productType = "auto_renewable"
            $0.consumptionRequestReason = "FULFILLMENT_ISSUE"
        }
        notification.transaction?.offerType = offerType
        notification.transaction?.offerIdentifier = "stay-with-us"
        notification.renewal?.renewalPrice = 4_990
        notification.renewal?.currency = "EUR"
        notification.renewal?.offerType = 2
        notification.renewal?.offerIdentifier = "promo-2"
        let event = try samples.processor().process(try samples.record(notification)).event()
        #expect(event.type == .consumptionRequest)
        #expect(event.consumptionRequestReason == "FULFILLMENT_ISSUE")
        let transaction = try #require(event.transaction)
        #expect(transaction.offerType == Int64(offerType) && transaction.offerIdentifier == "stay-with-us")
        #expect(transaction.storefront == "USA" && transaction.storefrontId == "143441")
        let renewal = try #require(event.renewal)
        #expect(renewal.renewalPrice == 4_990 && renewal.currency == "EUR")
        #expect(renewal.offerType == 2 && renewal.offerIdentifier == "promo-2")
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(PurchaseEventJSON.encode(event))) as? [String: Any])
        #expect(json["consumption_request_reason"] as? String == "FULFILLMENT_ISSUE")
        let written = try #require(json["transaction"] as? [String: Any])
        #expect(written["offer_type"] as? Int == offerType && written["storefront_id"] as? String == "143441")
        #expect((json["renewal"] as? [String: Any])?["renewal_price"] as? Int == 4_990)
        // Any other notification: null, never omitted.
        let renewed = try samples.processor().process(try samples.record(samples.notification("DID_RENEW"))).event()
        #expect(renewed.consumptionRequestReason == nil && renewed.transaction?.offerType == nil)
        let plain = try #require(
            try JSONSerialization.jsonObject(with: Data(PurchaseEventJSON.encode(renewed))) as? [String: Any])
        #expect(plain["consumption_request_reason"] is NSNull)
        #expect((plain["transaction"] as? [String: Any])?["offer_type"] is NSNull)
        #expect((plain["renewal"] as? [String: Any])?["renewal_price"] as? Int == 990)
    }

    /// Issue 29 item 4: RESCIND_CONSENT's `appData.signedAppTransactionInfo`, verified like the transaction, gives the
    /// event its `app_transaction_id`; another app's app transaction is refused.
    @Test func rescindConsentCarriesTheVerifiedAppTransactionId() throws {
        let notification = samples.notification("RESCIND_CONSENT")
        let event = try samples.processor().process(try samples.record(notification)).event()
        #expect(event.type == .info && event.transaction == nil)
        #expect(event.appTransactionId == "705000000000001")
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(PurchaseEventJSON.encode(event))) as? [String: Any])
        #expect(json["app_transaction_id"] as? String == "705000000000001")
        #expect(try MessageCoding.decode(PurchaseEvent.self, from: PurchaseEventJSON.encode(event)) == event)
        // Every other notification: null.
        let renewal = try samples.processor().process(try samples.record(samples.notification("DID_RENEW"))).event()
        #expect(renewal.appTransactionId == nil)
        // The app transaction of another app inside this app's notification: bundle_mismatch, no event.
        let otherApp = try samples.pki.signer.sign(
            payload: Array(
                (#"{"appTransactionId":"7","bundleId":"com.other.app","receiptType":"Production","receiptCreationDate":"#
                    + "\(samples.pki.signedDateMs)}").utf8))
        let mixed = try samples.pki.signer.sign(
            payload: notification.payloadJSON(
                signedTransactionInfo: nil, signedRenewalInfo: nil, signedAppTransactionInfo: otherApp))
        let refused = samples.processor().process(try NotificationSamples.record(signedPayload: mixed))
        guard case .failure(let rejection) = refused else {
            Issue.record("a notification carrying another app's app transaction was accepted")
            return
        }
        #expect(rejection.reason == .bundleMismatch)
        #expect(rejection.message.contains("appData.signedAppTransactionInfo"))
    }

    @Test func aTypeAppleAddsLaterIsAnInfoEventNotAFailure() throws {
        let notification = samples.notification("SOMETHING_APPLE_ADDS_IN_2030", subtype: "WHATEVER")
        let event = try samples.processor().process(try samples.record(notification)).event()
        #expect(event.type == .info)
        #expect(event.notificationType == "SOMETHING_APPLE_ADDS_IN_2030" && event.subtype == "WHATEVER")
    }

    @Test func aCreditCarriesTheSameTransactionObjectAsResults() throws {
        let notification = samples.notification("ONE_TIME_CHARGE") {
            $0.transactionId = "2000000123456789"
            $0.originalTransactionId = "2000000000000001"
            $0.productId = "com.example.gems100"
        }
        let result = samples.processor().process(try samples.record(notification))
        let event = try result.event()
        let transaction = try #require(event.transaction)
        #expect(event.type == .credit && !event.familyShared)
        // The purchase is the original transaction (CONTRACT "Purchase identity"), not the id Apple minted now.
        #expect(transaction.creditKey == "apple:production:2000000000000001")
        #expect(transaction.originalTransactionId == "2000000000000001")
        #expect(transaction.price == 990 && transaction.currency == "USD" && transaction.transactionReason == "PURCHASE")
        #expect(!transaction.isUpgraded)
        #expect(transaction.productId == "com.example.gems100" && transaction.productType == .consumable)
        #expect(transaction.quantity == 1 && transaction.inAppOwnershipType == "PURCHASED")
        #expect(transaction.creditable && transaction.cancellationDateMs == nil)
        // Keyed by the original transaction, so one purchase's events stay in order.
        #expect(try result.get().key == Array("2000000000000001".utf8))
    }

    @Test func anUpgradeIsACreditOfTheNewPeriod() throws {
        // Apple starts the upgrade's period at once and charges it; the notification carries that new transaction.
        let notification = samples.notification("DID_CHANGE_RENEWAL_PREF", subtype: "UPGRADE") {
            $0.transactionId = "2000000000000500"
            $0.originalTransactionId = "2000000000000400"
            $0.productId = "pro_yearly"
        }
        let event = try samples.processor().process(try samples.record(notification)).event()
        let transaction = try #require(event.transaction)
        #expect(event.type == .credit)
        #expect(transaction.productType == .autoRenewable && transaction.creditable && !transaction.isUpgraded)
        let period = try #require(notification.transaction?.webOrderLineItemId)
        #expect(transaction.creditKey == "apple:production:period:\(period)")
    }

    @Test func anUpgradedPeriodIsNeverCreditable() throws {
        let notification = samples.notification("DID_RENEW") {
            $0.transactionId = "2000000000000600"
            $0.isUpgraded = true
        }
        let event = try samples.processor().process(try samples.record(notification)).event()
        let transaction = try #require(event.transaction)
        #expect(transaction.isUpgraded && !transaction.creditable)
    }

    @Test func aQuantityIsCarriedForCreditTimesQuantity() throws {
        let notification = samples.notification("ONE_TIME_CHARGE") {
            $0.transactionId = "2000000000000700"
            $0.quantity = 5
        }
        let event = try samples.processor().process(try samples.record(notification)).event()
        #expect(event.transaction?.quantity == 5 && event.transaction?.creditable == true)
    }

    @Test func aProratedRefundIsADebitWithItsPercentage() throws {
        let notification = samples.notification("REFUND") {
            $0.transactionId = "2000000000000042"
            $0.revocationPercentage = 50_000
        }
        let event = try samples.processor().process(try samples.record(notification)).event()
        let transaction = try #require(event.transaction)
        #expect(event.type == .debit)
        #expect(transaction.revocationType == "REFUND_PRORATED" && transaction.revocationPercentage == 50_000)
        #expect(transaction.cancellationDateMs == notification.transaction?.revocationDateMs)
        #expect(transaction.cancellationReason == "0")
        #expect(!transaction.creditable)
        #expect(transaction.creditKey == "apple:production:2000000000000042")
    }

    @Test func aRefundThenItsReversalDebitAndRecreditTheSameCreditKey() throws {
        let processor = samples.processor()
        let refund = samples.notification("REFUND") { $0.transactionId = "2000000000000077" }
        let reversal = samples.notification("REFUND_REVERSED") { $0.transactionId = "2000000000000077" }
        let debit = try processor.process(try samples.record(refund)).event()
        let recredit = try processor.process(try samples.record(reversal)).event()
        #expect(debit.type == .debit && recredit.type == .recredit)
        #expect(debit.eventId != recredit.eventId)
        #expect(debit.transaction?.creditKey == recredit.transaction?.creditKey)
        #expect(debit.transaction?.revocationType == "REFUND_FULL" && debit.transaction?.creditable == false)
        // After the reversal Apple's transaction no longer shows the refund: it may be credited again.
        #expect(recredit.transaction?.cancellationDateMs == nil && recredit.transaction?.creditable == true)
    }

    @Test func aFamilyRevokeWithdrawsAnEntitlementNoPayment() throws {
        let notification = samples.notification("REVOKE") { $0.transactionId = "2000000000000099" }
        let event = try samples.processor().process(try samples.record(notification)).event()
        #expect(event.type == .revoke && event.familyShared)
        #expect(event.transaction?.inAppOwnershipType == "FAMILY_SHARED")
        #expect(event.transaction?.revocationType == "FAMILY_REVOKE")
        #expect(event.transaction?.creditable == false)
    }

    @Test func aFamilySharedPurchaseIsACreditMarkedFamilyShared() throws {
        let notification = samples.notification("ONE_TIME_CHARGE") {
            $0.ownershipType = "FAMILY_SHARED"
            $0.productType = "non_consumable"
        }
        let event = try samples.processor().process(try samples.record(notification)).event()
        #expect(event.type == .credit && event.familyShared)
        #expect(event.transaction?.inAppOwnershipType == "FAMILY_SHARED")
    }

    @Test func theTestNotificationIsATestEventKeyedByItsId() throws {
        let notification = samples.notification("TEST")
        let result = samples.processor().process(try samples.record(notification))
        let event = try result.event()
        #expect(event.type == .test && event.transaction == nil && event.renewal == nil && !event.familyShared)
        #expect(try result.get().key == Array(notification.notificationUUID.utf8))
    }

    @Test func aSubscriptionEventCarriesTheRenewalEssentialsAndStatus() throws {
        let notification = samples.notification("DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD") {
            $0.originalTransactionId = "2000000000000500"
        }
        let result = samples.processor().process(try samples.record(notification))
        let event = try result.event()
        #expect(event.type == .subscriptionStatus && event.subscriptionStatus == 4)
        let renewal = try #require(event.renewal)
        #expect(renewal.autoRenewStatus == 1 && renewal.isInBillingRetryPeriod == true)
        #expect(renewal.autoRenewProductId == "one_month_subscription")
        #expect(renewal.gracePeriodExpiresDateMs == notification.renewal?.gracePeriodExpiresDateMs)
        #expect(event.transaction?.productType == .autoRenewable && event.transaction?.expiresDateMs != nil)
        #expect(try result.get().key == Array("2000000000000500".utf8))
    }

    @Test func aRedeliveredNotificationYieldsTheSameEvent() throws {
        let processor = samples.processor()
        let record = try samples.record(samples.notification("DID_RENEW"))
        #expect(try processor.process(record).get() == (try processor.process(record).get()))
    }

    @Test func externalPurchaseTokensTakeTheirEnvironmentFromTheTokenId() throws {
        let sandbox = samples.notification("EXTERNAL_PURCHASE_TOKEN", subtype: "UNREPORTED") {
            $0.environment = "Sandbox"
        }
        let event = try samples.processor().process(try samples.record(sandbox)).event()
        #expect(event.environment == .sandbox && event.type == .info)
        let rejected = samples.processor(sandboxPolicy: .reject).process(try samples.record(sandbox))
        #expect(rejected.rejection()?.reason == .sandboxNotAllowed)
    }

    @Test func theProductCatalogJudgesEventTransactionsAsItJudgesResults() throws {
        let gems = JSONValue.object(["item": .string("gems"), "amount": .integer(100)])
        let catalog = ProductCatalog(products: ["com.example.gems100": .init(type: .consumable, credit: gems)])
        let processor = NotificationProcessor(
            verifier: samples.pki.verifier(),
            policy: NotificationPolicy(allowedBundleIds: [NotificationSamples.bundleId]), catalog: catalog)
        let listed = samples.notification("ONE_TIME_CHARGE") { $0.productId = "com.example.gems100" }
        let credit = try processor.process(try samples.record(listed)).event()
        #expect(credit.transaction?.creditable == true && credit.transaction?.productType == .consumable)
        #expect(credit.transaction?.credit == gems)
        let unlisted = samples.notification("ONE_TIME_CHARGE") { $0.productId = "com.example.unknown" }
        let notCreditable = try processor.process(try samples.record(unlisted)).event()
        #expect(notCreditable.type == .credit)
        #expect(notCreditable.transaction?.creditable == false && notCreditable.transaction?.credit == nil)
        // A refund keeps the catalog's credit: what to take back.
        let refund = samples.notification("REFUND") { $0.productId = "com.example.gems100" }
        let debit = try processor.process(try samples.record(refund)).event()
        #expect(debit.transaction?.creditable == false && debit.transaction?.credit == credit.transaction?.credit)
    }

    @Test func aRevocationDateThatCannotBeReadIsNeverCreditable() throws {
        let notification = samples.notification("ONE_TIME_CHARGE")
        var json = String(decoding: try #require(notification.transaction).json, as: UTF8.self)
        json.removeLast()
        json += #","revocationDate":"soon"}"#
        let transaction = try samples.pki.signer.sign(payload: Array(json.utf8))
        let payload = notification.payloadJSON(signedTransactionInfo: transaction, signedRenewalInfo: nil)
        let record = try NotificationSamples.record(signedPayload: try samples.pki.signer.sign(payload: payload))
        let event = try samples.processor().process(record).event()
        #expect(event.transaction?.creditable == false)
    }

    // MARK: What becomes a DLQ record

    @Test(
        "a signedPayload with a broken signature or chain is invalid_signature",
        arguments: TestSigningPKI.Defect.allCases)
    func brokenOuterSignatures(_ defect: TestSigningPKI.Defect) throws {
        let record = try samples.record(samples.notification("ONE_TIME_CHARGE"), defect: defect)
        let rejection = samples.processor().process(record).rejection()
        #expect(rejection?.reason == .invalidSignature)
        #expect(rejection?.message.hasPrefix("signedPayload does not verify") == true)
    }

    @Test func aNotificationSignedUnderAnotherRootIsInvalidSignature() throws {
        let other = try TestSigningPKI.mint()
        let signed = try samples.notification("REFUND").signedPayload(signer: other.signer)
        let rejection = samples.processor().process(try NotificationSamples.record(signedPayload: signed)).rejection()
        #expect(rejection?.reason == .invalidSignature)
    }

    @Test func aTamperedNestedTransactionIsInvalidSignature() throws {
        let notification = samples.notification("ONE_TIME_CHARGE")
        let transaction = try #require(notification.transaction)
        let tampered = try samples.pki.sign(payload: transaction.json, defect: .tamperedPayload)
        let payload = notification.payloadJSON(signedTransactionInfo: tampered, signedRenewalInfo: nil)
        let record = try NotificationSamples.record(signedPayload: try samples.pki.signer.sign(payload: payload))
        let rejection = samples.processor().process(record).rejection()
        #expect(rejection?.reason == .invalidSignature)
        #expect(rejection?.message.hasPrefix("data.signedTransactionInfo does not verify") == true)
        #expect(rejection?.notificationUUID == notification.notificationUUID)
    }

    @Test func aNestedRenewalInfoFromAnotherRootIsInvalidSignature() throws {
        let notification = samples.notification("DID_RENEW")
        let other = try TestSigningPKI.mint()
        let transaction = try samples.pki.signer.sign(payload: try #require(notification.transaction).json)
        let renewal = try other.signer.sign(payload: try #require(notification.renewal).json)
        let payload = notification.payloadJSON(signedTransactionInfo: transaction, signedRenewalInfo: renewal)
        let record = try NotificationSamples.record(signedPayload: try samples.pki.signer.sign(payload: payload))
        #expect(samples.processor().process(record).rejection()?.reason == .invalidSignature)
    }

    @Test func anotherAppsBundleIsBundleMismatch() throws {
        let record = try samples.record(samples.notification("REFUND") { $0.bundleId = "com.attacker.app" })
        let rejection = samples.processor().process(record).rejection()
        #expect(rejection?.reason == .bundleMismatch)
        #expect(rejection?.message.contains("com.attacker.app") == true)
    }

    @Test func aTransactionOfAnotherBundleInsideIsBundleMismatch() throws {
        var notification = samples.notification("ONE_TIME_CHARGE")
        notification.transaction?.bundleId = "com.attacker.app"
        let rejection = samples.processor().process(try samples.record(notification)).rejection()
        #expect(rejection?.reason == .bundleMismatch)
    }

    @Test func aProductionNotificationOfAnotherAppAppleIdIsBundleMismatch() throws {
        let wrongApp = try samples.record(samples.notification("REFUND") { $0.appAppleId = 999 })
        let rejection = samples.processor().process(wrongApp).rejection()
        #expect(rejection?.reason == .bundleMismatch)
        #expect(rejection?.message.contains("APPLE_APP_APPLE_ID") == true)
        let noAppId = try samples.record(samples.notification("REFUND") { $0.appAppleId = nil })
        #expect(samples.processor().process(noAppId).rejection()?.reason == .bundleMismatch)
        // Unset, nothing is compared; in Sandbox Apple's libraries do not compare either.
        _ = try samples.processor(appAppleId: nil).process(wrongApp).event()
        let sandbox = try samples.record(
            samples.notification("REFUND") {
                $0.appAppleId = 999
                $0.environment = "Sandbox"
            })
        #expect(try samples.processor().process(sandbox).event().environment == .sandbox)
    }

    @Test func sandboxIsRefusedWhenThePolicySaysSoAndXcodeAlways() throws {
        let sandbox = try samples.record(samples.notification("ONE_TIME_CHARGE") { $0.environment = "Sandbox" })
        #expect(samples.processor(sandboxPolicy: .reject).process(sandbox).rejection()?.reason == .sandboxNotAllowed)
        let event = try samples.processor().process(sandbox).event()
        #expect(event.transaction?.creditKey.hasPrefix("apple:sandbox:") == true)
        for environment in ["Xcode", "LocalTesting"] {
            let record = try samples.record(samples.notification("ONE_TIME_CHARGE") { $0.environment = environment })
            let rejection = samples.processor().process(record).rejection()
            #expect(rejection?.reason == .sandboxNotAllowed)
            #expect(rejection?.message.contains(environment) == true)
        }
    }

    @Test func aTransactionFromAnotherEnvironmentThanItsNotificationIsRefused() throws {
        var notification = samples.notification("ONE_TIME_CHARGE")
        notification.transaction?.environment = "Sandbox"
        let rejection = samples.processor().process(try samples.record(notification)).rejection()
        #expect(rejection?.reason == .malformedSubmission)
    }

    @Test func aMoneyEventWithoutItsTransactionIsRefusedNotEmittedEmpty() throws {
        var notification = samples.notification("REFUND")
        notification.transaction = nil
        let rejection = samples.processor().process(try samples.record(notification)).rejection()
        #expect(rejection?.reason == .malformedSubmission)
        #expect(rejection?.message.contains("REFUND") == true)
    }

    @Test func bytesThatAreNotANotificationRecordAreMalformed() throws {
        let values = [
            "not json", #"{"schema_version":1}"#, #"{"schema_version":2,"signed_payload":"a.b.c","received_at_ms":1}"#,
        ]
        for value in values {
            let rejection = samples.processor().process(Array(value.utf8)).rejection()
            #expect(rejection?.reason == .malformedSubmission, "\(value)")
        }
        let garbage = try NotificationSamples.record(signedPayload: "not-a-jws")
        #expect(samples.processor().process(garbage).rejection()?.reason == .invalidSignature)
    }

    @Test func aRecordOverTheSizeLimitIsNotRead() throws {
        // A valid record padded with whitespace (valid JSON): an event at the limit, refused unread one byte over.
        let record = try samples.record(samples.notification("TEST"))
        let limit = MessageLimits.maximumValueBytes
        let atLimit = record + [UInt8](repeating: UInt8(ascii: " "), count: limit - record.count)
        #expect(try samples.processor().process(atLimit).event().type == .test)
        let rejection = samples.processor().process(atLimit + [UInt8(ascii: " ")]).rejection()
        #expect(rejection?.reason == .malformedSubmission)
        #expect(rejection?.message.contains("\(limit + 1) bytes, over the verifier's limit of \(limit)") == true)
    }

    @Test func hostileJSONGivesCleanRefusalsQuickly() {
        // A million '[', a 100 MB number (refused unread), invalid UTF-8 and a raw NUL byte in signed_payload.
        let record = Array(#"{"schema_version":1,"origin":"apple_delivery","received_at_ms":1,"#.utf8)
        let inputs: [(String, [UInt8])] = [
            ("deep", [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)),
            ("huge number", record + Array(#""x":"#.utf8) + [UInt8](repeating: 0x37, count: 100_000_000)),
            ("invalid UTF-8", record + Array(#""signed_payload":"a.b"#.utf8) + [0xFF, 0xFE, 0x22, 0x7D]),
            ("raw NUL", record + Array(#""signed_payload":"a.b\#u{0}.c"}"#.utf8)),
        ]
        let processor = samples.processor()
        for (name, value) in inputs {
            let started = ContinuousClock.now
            let rejection = processor.process(value).rejection()
            #expect(rejection?.reason == .malformedSubmission, "\(name)")
            // Linear work takes well under a second; a generous bound for a loaded machine.
            #expect(ContinuousClock.now - started < .seconds(10), "\(name)")
        }
    }

    @Test func aVerifiedPayloadWithoutANotificationUUIDIsMalformed() throws {
        let payload = Array(#"{"notificationType":"TEST","signedDate":\#(samples.pki.signedDateMs),"data":{}}"#.utf8)
        let record = try NotificationSamples.record(signedPayload: try samples.pki.signer.sign(payload: payload))
        let rejection = samples.processor().process(record).rejection()
        #expect(rejection?.reason == .malformedSubmission && rejection?.message.contains("notificationUUID") == true)
    }
}
