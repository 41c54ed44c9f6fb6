import Foundation
@_spi(Testing) import SignedData
import Testing

@Suite("Payload decoding")
struct PayloadDecodingTests {
    func transaction(_ json: String) throws -> JWSTransactionPayload {
        try SignedPayloadDecoder.decode(JWSTransactionPayload.self, from: Array(json.utf8))
    }

    @Test("decodes every transaction field, with ids as strings or numbers and unknown fields ignored")
    func transactionFields() throws {
        let decoded = try transaction("""
            {"transactionId":23456,"originalTransactionId":"12345","webOrderLineItemId":34343,"bundleId":"com.example",
            "productId":"com.example.product","subscriptionGroupIdentifier":"55555","purchaseDate":1698148900000,
            "originalPurchaseDate":1698148800000,"expiresDate":1698149000000,"quantity":1,
            "type":"Auto-Renewable Subscription","appAccountToken":"7e3fb20b-4cdb-47cc-936d-99d65f608138",
            "inAppOwnershipType":"PURCHASED","signedDate":1698148900000,"revocationReason":1,
            "revocationDate":1698148950000,"revocationType":"REFUND_PRORATED","revocationPercentage":50000,
            "isUpgraded":true,"offerType":1,"offerIdentifier":"abc.123","environment":"LocalTesting",
            "transactionReason":"PURCHASE","storefront":"USA","storefrontId":"143441","price":10990,"currency":"USD",
            "appTransactionId":"71134","advancedCommerceInfo":{"items":[]},"someFutureField":[1,2,3]}
            """)
        #expect(decoded.transactionId == "23456")
        #expect(decoded.webOrderLineItemId == "34343")
        #expect(decoded.originalTransactionId == "12345")
        #expect(decoded.type == .autoRenewableSubscription)
        #expect(decoded.inAppOwnershipType == .purchased)
        #expect(decoded.revocationDate == .value(1_698_148_950_000))
        #expect(decoded.revocationType == .refundProrated)
        #expect(decoded.revocationPercentage == .value(50_000))
        #expect(decoded.isUpgraded == .value(true))
        #expect(decoded.environment == .localTesting)
        #expect(decoded.transactionReason == .purchase)
        #expect(decoded.price == 10_990)
        #expect(decoded.appTransactionId == "71134")
        #expect(decoded.expiresDate == 1_698_149_000_000)
    }

    @Test("decodes the 2025-26 fields: offer discount type and period, billing plan, commitment info, renewal plan")
    func fieldsOf2025And2026() throws {
        let decoded = try transaction("""
            {"transactionId":"1","offerType":1,"offerDiscountType":"FREE_TRIAL","offerPeriod":"P1W",
            "revocationType":"FAMILY_REVOKE","billingPlanType":"BILLED_UPFRONT",
            "commitmentInfo":{"commitmentPeriod":"P1Y","billingCount":12}}
            """)
        #expect(decoded.offerDiscountType == "FREE_TRIAL" && decoded.offerPeriod == "P1W")
        #expect(decoded.revocationType == .familyRevoke)
        #expect(decoded.billingPlanType == "BILLED_UPFRONT")
        #expect(decoded.commitmentInfo == .object(["commitmentPeriod": .string("P1Y"), "billingCount": .integer(12)]))
        // A whole number past 2^53 is kept exactly, not rounded through a double.
        #expect(
            try transaction(#"{"commitmentInfo":{"id":1234567890123456789}}"#).commitmentInfo
                == .object(["id": .integer(1_234_567_890_123_456_789)]))
        // Not an object: absent, never a failure.
        #expect(try transaction(#"{"commitmentInfo":"soon","billingPlanType":7}"#).commitmentInfo == nil)
        #expect(try transaction(#"{"commitmentInfo":"soon","billingPlanType":7}"#).billingPlanType == "7")
        let renewal = try SignedPayloadDecoder.decode(
            JWSRenewalInfoPayload.self, from: Array(#"{"renewalBillingPlanType":"MONTHLY","offerPeriod":"P1M"}"#.utf8))
        #expect(renewal.renewalBillingPlanType == "MONTHLY" && renewal.offerPeriod == "P1M")
    }

    @Test("decodes Xcode's fractional-millisecond dates and keeps unknown enum values as they are")
    func xcodeFractionalDates() throws {
        let jws = try SignedDataFixtures.text("apple-mock-signed-data/xcode-signed-transaction")
        let decoded = try SignedPayloadDecoder.decode(JWSTransactionPayload.self, from: try CompactJWS.unverifiedPayload(jws))
        #expect(decoded.purchaseDate == 1_697_679_936_049)
        #expect(decoded.signedDate == 1_697_679_936_056)
        #expect(decoded.expiresDate == 1_700_358_336_049)
        #expect(decoded.environment == .xcode)
        #expect(decoded.transactionId == "0")
        let odd = try transaction(#"{"type":"Brand-New Type","environment":"Moon","inAppOwnershipType":7,"isUpgraded":"true"}"#)
        #expect(odd.type?.rawValue == "Brand-New Type")
        #expect(odd.environment?.rawValue == "Moon")
        #expect(odd.inAppOwnershipType?.rawValue == "7")
        #expect(odd.isUpgraded == .value(true))
    }

    @Test("marks present but unreadable revocation fields as unreadable, and absent or null ones as absent")
    func moneyFieldsFailClosed() throws {
        let unreadable = try transaction(#"{"revocationDate":"soon","revocationPercentage":{"x":1}}"#)
        #expect(unreadable.revocationDate == .unreadable)
        #expect(unreadable.revocationDate.isPresent)
        #expect(unreadable.revocationPercentage == .unreadable)
        let absent = try transaction(#"{"revocationDate":null}"#)
        #expect(absent.revocationDate == .absent)
        #expect(absent.revocationPercentage == .absent)
        #expect(!absent.revocationDate.isPresent)
        let text = try transaction(#"{"revocationDate":"1698148950000","revocationPercentage":25000.0}"#)
        #expect(text.revocationDate.value == 1_698_148_950_000)
        #expect(text.revocationPercentage.value == 25_000)
        let huge = try transaction(#"{"revocationDate":1e300}"#)
        #expect(huge.revocationDate == .unreadable)
    }

    @Test("decodes renewal info and notifications, keeping summary-style bodies loosely")
    func renewalAndNotifications() throws {
        let renewal = try SignedPayloadDecoder.decode(JWSRenewalInfoPayload.self, from: Array("""
            {"expirationIntent":1,"originalTransactionId":"12345","autoRenewProductId":"com.example.product.2",
            "productId":"com.example.product","autoRenewStatus":1,"isInBillingRetryPeriod":false,"priceIncreaseStatus":0,
            "gracePeriodExpiresDate":1698148900000,"offerType":2,"offerIdentifier":"abc.123","signedDate":1698148800000,
            "environment":"Sandbox","recentSubscriptionStartDate":1698148800000,"renewalDate":1698148850000,
            "renewalPrice":9990,"currency":"USD","eligibleWinBackOfferIds":["eligible1","eligible2"]}
            """.utf8))
        #expect(renewal.autoRenewProductId == "com.example.product.2")
        #expect(renewal.isInBillingRetryPeriod == false)
        #expect(renewal.renewalPrice == 9990)
        #expect(renewal.eligibleWinBackOfferIds == ["eligible1", "eligible2"])
        let notification = try SignedPayloadDecoder.decode(NotificationPayload.self, from: Array("""
            {"notificationType":"REFUND","subtype":"SOMETHING_NEW","notificationUUID":"002e14d5","version":"2.0",
            "signedDate":1698148900000,"data":{"appAppleId":"41234","bundleId":"com.example","bundleVersion":"1.2.3",
            "signedTransactionInfo":"a.b.c","signedRenewalInfo":"d.e.f","environment":"Production","status":1,
            "consumptionRequestReason":"UNINTENDED_PURCHASE"}}
            """.utf8))
        #expect(notification.notificationType == .refund)
        #expect(notification.subtype?.rawValue == "SOMETHING_NEW")
        #expect(notification.data?.appAppleId == 41_234)
        #expect(notification.data?.signedTransactionInfo == "a.b.c")
        #expect(notification.data?.consumptionRequestReason == "UNINTENDED_PURCHASE")
        let summary = try SignedPayloadDecoder.decode(NotificationPayload.self, from: Array("""
            {"notificationType":"RENEWAL_EXTENSION","subtype":"SUMMARY","signedDate":1,
            "summary":{"requestIdentifier":"r1","succeededCount":5}}
            """.utf8))
        #expect(summary.data == nil)
        #expect(summary.summary?["succeededCount"] == .integer(5))
        #expect(throws: SignedDataError.self) { try SignedPayloadDecoder.decode(NotificationPayload.self, from: Array("[]".utf8)) }
    }
}
