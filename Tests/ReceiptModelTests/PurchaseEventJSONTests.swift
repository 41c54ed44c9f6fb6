import ReceiptModel
import ServiceSupport
import Testing

/// Events are written by `PurchaseEventJSON` only, not `JSONEncoder`: the bytes must stay exactly the ones
/// `JSONEncoder` writes (`MessageCoding`), every member written, null or not (`WrittenJSON`), and its strict reader
/// reads back what was written.
@Suite("PurchaseEventJSON")
struct PurchaseEventJSONTests {
    static let full: PurchaseEvent = {
        let transaction = VerifiedTransaction(
            TransactionFields(
                transactionId: "2000000123456789", originalTransactionId: "2000000000000001",
                productId: "com.example/gems \"100\"", quantity: 3, purchaseDateMs: 1_764_489_500_000,
                expiresDateMs: 1_767_000_000_000, cancellationDateMs: 1_764_575_900_000, cancellationReason: "0",
                webOrderLineItemId: "2000000012345678", inAppOwnershipType: "FAMILY_SHARED", isTrialPeriod: true,
                appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138", productType: .autoRenewable,
                revocationType: "REFUND_PRORATED", revocationPercentage: 50_000, offerDiscountType: "PAY_UP_FRONT",
                offerPeriod: "P1Y", billingPlanType: "MONTHLY",
                commitmentInfo: .object(["commitmentPeriod": .string("P1Y"), "billingCount": .integer(12)]),
                appTransactionId: "705000000000001", offerType: 5, offerIdentifier: "stay \"a\" while",
                storefront: "FRA", storefrontId: "143442"),
            creditable: false,
            credit: .object([
                "item": .string("gems"), "amount": .integer(100), "bonus": .array([.bool(true), .null, .integer(-1)]),
                "nested": .object(["z": .string("ü"), "a": .integer(0)]),
            ]),
            notCreditableReason: .refunded, environment: .sandbox)
        return PurchaseEvent(
            eventId: "002e14d5-51f5-4503-b5a8-c3a1af68eb20", type: .debit, notificationType: "REFUND",
            subtype: "SOME_SUBTYPE", environment: .sandbox, bundleId: "com.example.game", appAppleId: 1_234_567_890,
            transaction: transaction,
            renewal: RenewalSummary(
                autoRenewStatus: 0, autoRenewProductId: "com.example.pro", expirationIntent: 2,
                gracePeriodExpiresDateMs: 1_765_000_000_000, isInBillingRetryPeriod: true,
                renewalBillingPlanType: "BILLED_UPFRONT", appTransactionId: "705000000000001", renewalPrice: 9_990,
                currency: "EUR", offerType: 99, offerIdentifier: "win-back-1", offerDiscountType: "FREE_TRIAL",
                offerPeriod: "P1M"),
            subscriptionStatus: 4, familyShared: true, signedDateMs: 1_764_575_900_500, receivedAtMs: 1_764_575_901_000,
            consumptionRequestReason: "FULFILLMENT_ISSUE")
    }()

    static let minimal = PurchaseEvent(
        eventId: "e-1", type: .info, notificationType: "SOMETHING_NEW", subtype: nil, environment: nil, bundleId: nil,
        appAppleId: nil, transaction: nil, renewal: nil, subscriptionStatus: nil, familyShared: false, signedDateMs: 1,
        receivedAtMs: 0)

    @Test(arguments: [full, minimal])
    func theBytesAreJSONEncodersForEveryMember(_ event: PurchaseEvent) throws {
        let written = PurchaseEventJSON.encode(event)
        #expect(
            String(decoding: written, as: UTF8.self)
                == String(decoding: try WrittenJSON.canonical(written), as: UTF8.self))
        #expect(try WrittenJSON.memberNames(written) == [WrittenJSON.event])
        #expect(
            try WrittenJSON.memberNames(written, at: "transaction")
                == (event.transaction == nil ? [] : [WrittenJSON.transaction]))
        #expect(
            try WrittenJSON.memberNames(written, at: "renewal") == (event.renewal == nil ? [] : [WrittenJSON.renewal]))
        #expect(try MessageCoding.decode(PurchaseEvent.self, from: written) == event)
    }

    /// The round trip: what the strict reader reads of the written bytes is every member of the event it reads.
    @Test(arguments: [full, minimal])
    func theStrictReaderReadsBackWhatWasWritten(_ event: PurchaseEvent) throws {
        #expect(try PurchaseEventJSON.read(PurchaseEventJSON.encode(event)) == PurchaseEventJSON.Members(event))
    }
}
