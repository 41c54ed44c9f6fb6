import AppStore
import Catalog
import ReceiptModel
import ServiceSupport
import SignedData
import Testing

/// Signed data's 2025-26 fields (issue 29 item 3) in results: decoded, mapped and judged by the real code.
@Suite struct SignedDataFieldsTests {
    static let gems = JSONValue.object(["item": .string("gems"), "amount": .integer(100)])
    static let catalog = ProductCatalog(products: ["gems_100": .init(type: .consumable, credit: gems)])

    /// Issue 29 item 3: a signed transaction's 2025-26 fields, through the real decoder and mapping, in the result's
    /// transaction; they change nothing about money.
    @Test func signedDataOfferAndCommitmentFieldsAreCarried() throws {
        let payload = try SignedPayloadDecoder.decode(
            JWSTransactionPayload.self,
            from: Array(
                #"""
                {"transactionId":"7","originalTransactionId":"7","productId":"gems_100","purchaseDate":1700000000000,
                "type":"Consumable","offerType":2,"offerDiscountType":"PAY_UP_FRONT","offerPeriod":"P6M",
                "billingPlanType":"MONTHLY","commitmentInfo":{"commitmentPeriod":"P1Y","billingCount":12}}
                """#.utf8))
        let apple = try SignedTransactionMapping.transaction(payload)
        let carried = VerdictRules.normalize(apple, .production, catalog: Self.catalog)
        #expect(carried.offerDiscountType == "PAY_UP_FRONT" && carried.offerPeriod == "P6M")
        #expect(carried.billingPlanType == "MONTHLY")
        #expect(carried.commitmentInfo == JSONValue.object(["commitmentPeriod": .string("P1Y"), "billingCount": .integer(12)]))
        #expect(carried.creditable && carried.notCreditableReason == nil && carried.credit == Self.gems)
        let json = Self.text(carried)
        #expect(json.contains(#""offer_discount_type":"PAY_UP_FRONT""#) && json.contains(#""offer_period":"P6M""#))
        #expect(json.contains(#""billing_plan_type":"MONTHLY""#))
        #expect(json.contains(#""commitment_info":{"billingCount":12,"commitmentPeriod":"P1Y"}"#))
        #expect(try MessageCoding.decode(VerifiedTransaction.self, from: Array(json.utf8)) == carried)
    }

    /// Issue 29 item 2: a signed transaction's `appTransactionId`, through the real decoder and mapping, in the
    /// result's transaction as `app_transaction_id`; null (never omitted) when Apple's data has none. Money, the
    /// credit and the credit key do not depend on it.
    @Test func signedDataAppTransactionIdIsCarriedAndNullWhenAbsent() throws {
        func carried(_ extra: String) throws -> VerifiedTransaction {
            let payload = try SignedPayloadDecoder.decode(
                JWSTransactionPayload.self,
                from: Array(
                    (#"{"transactionId":"7","originalTransactionId":"7","productId":"gems_100","#
                        + #""purchaseDate":1700000000000,"type":"Consumable""# + extra + "}").utf8))
            let apple = try SignedTransactionMapping.transaction(payload)
            return VerdictRules.normalize(apple, .production, catalog: Self.catalog)
        }
        let with = try carried(#","appTransactionId":"705000000000001""#)
        let without = try carried("")
        #expect(with.appTransactionId == "705000000000001")
        #expect(without.appTransactionId == nil)
        #expect(with.creditKey == without.creditKey && with.creditable && without.creditable)
        #expect(with.credit == without.credit)
        let withJSON = Self.text(with)
        let withoutJSON = Self.text(without)
        #expect(withJSON.contains(#""app_transaction_id":"705000000000001""#))
        #expect(withoutJSON.contains(#""app_transaction_id":null"#))
        #expect(try MessageCoding.decode(VerifiedTransaction.self, from: Array(withJSON.utf8)) == with)
        #expect(try MessageCoding.decode(VerifiedTransaction.self, from: Array(withoutJSON.utf8)) == without)
    }

    /// Issue 41 item 9: the offer (`offerType` 1...5 and a value Apple adds later, kept as it came;
    /// `offerIdentifier`) and the storefront through the real decoder and mapping into the result's transaction; null
    /// (never omitted) when Apple's data has none, and from verifyReceipt. Money does not depend on them.
    @Test(arguments: [1, 2, 3, 4, 5, 77])
    func offerAndStorefrontAreCarried(offerType: Int) throws {
        let payload = try SignedPayloadDecoder.decode(
            JWSTransactionPayload.self,
            from: Array(
                (#"{"transactionId":"7","originalTransactionId":"7","productId":"gems_100","purchaseDate":1700000000000,"#
                    + #""type":"Consumable","offerType":\#(offerType),"offerIdentifier":"spring-26","#
                    + #""storefront":"DEU","storefrontId":"143443"}"#).utf8))
        let carried = VerdictRules.normalize(
            try SignedTransactionMapping.transaction(payload), .production, catalog: Self.catalog)
        #expect(carried.offerType == Int64(offerType) && carried.offerIdentifier == "spring-26")
        #expect(carried.storefront == "DEU" && carried.storefrontId == "143443")
        #expect(carried.creditable && carried.credit == Self.gems)
        let json = Self.text(carried)
        #expect(json.contains(#""offer_type":\#(offerType)"#) && json.contains(#""offer_identifier":"spring-26""#))
        #expect(json.contains(#""storefront":"DEU""#) && json.contains(#""storefront_id":"143443""#))
        #expect(try MessageCoding.decode(VerifiedTransaction.self, from: Array(json.utf8)) == carried)
        let plain = VerdictRules.normalize(
            AppleTransaction(
                TransactionFields(
                    transactionId: "8", productId: "gems_100", purchaseDateMs: 1)), .production,
            catalog: Self.catalog)
        let plainJSON = Self.text(plain)
        for member in ["offer_type", "offer_identifier", "storefront", "storefront_id"] {
            #expect(plainJSON.contains(#""\#(member)":null"#), "\(member)")
        }
    }

    /// A transaction as results and events write it (`VerifiedTransactionJSON`, its one writer).
    private static func text(_ transaction: VerifiedTransaction) -> String {
        var out = JSONWriter(capacity: 1_024)
        VerifiedTransactionJSON.write(transaction, to: &out)
        return String(decoding: out.bytes, as: UTF8.self)
    }
}
