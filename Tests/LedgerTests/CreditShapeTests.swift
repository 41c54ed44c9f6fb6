@testable import Ledger
import LedgerRules
import ReceiptModel
import ServiceSupport
import Testing

/// Which `credit` objects the ledger applies, and that every other shape is refused rather than guessed.
@Suite struct CreditShapeTests {
    static let cases: [(JSONValue?, CreditShape?)] = [
        (nil, .nothing),
        (.null, .nothing),
        (.object(["item": .string("gems"), "amount": .integer(100)]), .grant(.item(name: "gems", amount: 100))),
        (.object(["entitlement": .string("pro")]), .grant(.entitlement(name: "pro"))),
        (.object(["entitlement": .string("premium"), "period": .string("P1M")]), .grant(.entitlement(name: "premium"))),
        (.object(["item": .string("gems"), "amount": .integer(0)]), nil),
        (.object(["item": .string("gems"), "amount": .integer(-5)]), nil),
        (.object(["item": .string("gems"), "amount": .number(1.5)]), nil),
        (.object(["item": .string("gems"), "amount": .string("100")]), nil),
        (.object(["item": .string("gems"), "amount": .integer(100), "bonus": .integer(50)]), nil),
        (.object(["entitlement": .string("pro"), "item": .string("gems"), "amount": .integer(1)]), nil),
        (.object(["entitlement": .string("")]), nil),
        (.object(["coins": .integer(5)]), nil),
        (.string("gems"), nil),
        (.array([]), nil),
    ]

    @Test func knownShapesAreReadAndEveryOtherIsUnknown() {
        for (credit, expected) in Self.cases {
            let shape = LedgerTransaction.shape(of: credit)
            if let expected {
                #expect(shape == expected, "\(String(describing: credit))")
            } else {
                guard case .unknown = shape else {
                    Issue.record("\(String(describing: credit)) was read as \(shape)")
                    continue
                }
            }
        }
    }

    @Test func theNewTransactionFieldsAreReadWhenPresentAndNullWhenAbsent() throws {
        let withFields = try LedgerDecoding.result(
            Array(#"{"schema_version":1,"submission_id":"s","outcome":"verified","environment":"Production","transactions":[{"credit_key":"k","transaction_id":"t","creditable":true,"is_upgraded":true,"price":990,"currency":"EUR","transaction_reason":"RENEWAL"}]}"#.utf8))
        let transaction = try #require(withFields.transactions.first)
        #expect(transaction.isUpgraded == true)
        #expect(transaction.price == 990)
        #expect(transaction.currency == "EUR")
        #expect(transaction.transactionReason == "RENEWAL")
        #expect(!Self.claimed(transaction), "an upgraded-away period is never credited")
        let without = try LedgerDecoding.result(
            Array(#"{"schema_version":1,"submission_id":"s","outcome":"verified","environment":"Production","transactions":[{"credit_key":"k","transaction_id":"t","creditable":true}]}"#.utf8))
        #expect(without.transactions.first?.isUpgraded == nil)
        #expect(without.transactions.first.map(Self.claimed) == true)
    }

    /// Issue 41 item 9: round 5's members (a transaction's offer and storefront, the renewal's price, currency and
    /// offer, a consumption request's reason) are read past, never a reason to dead-letter the message.
    @Test func roundFiveMembersDoNotMakeAMessageUnreadable() throws {
        let transaction = #"{"credit_key":"k","transaction_id":"t","creditable":true,"offer_type":5,"offer_identifier":"o","storefront":"USA","storefront_id":"143441"}"#
        let event = try LedgerDecoding.event(
            Array(#"{"schema_version":1,"event_id":"e","type":"consumption_request","environment":"Production","consumption_request_reason":"UNINTENDED_PURCHASE","renewal":{"renewal_price":9990,"currency":"USD","offer_type":2,"offer_identifier":"p","offer_discount_type":"FREE_TRIAL","offer_period":"P1W"},"transaction":\#(transaction)}"#.utf8))
        #expect(event.type == "consumption_request" && event.transaction.map(Self.claimed) == true)
        let result = try LedgerDecoding.result(
            Array(#"{"schema_version":1,"submission_id":"s","outcome":"verified","environment":"Production","transactions":[\#(transaction)]}"#.utf8))
        #expect(result.transactions.count == 1 && result.transactions.first.map(Self.claimed) == true)
    }

    /// The transaction as the ledger claims it (`CreditingRules.claims`).
    static func claimed(_ transaction: LedgerTransaction) -> Bool {
        CreditingRules.claims(creditable: transaction.creditable, isUpgraded: transaction.isUpgraded)
    }
}
