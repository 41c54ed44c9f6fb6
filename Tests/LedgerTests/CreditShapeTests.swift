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
        #expect(!transaction.shouldCredit, "an upgraded-away period is never credited")
        let without = try LedgerDecoding.result(
            Array(#"{"schema_version":1,"submission_id":"s","outcome":"verified","environment":"Production","transactions":[{"credit_key":"k","transaction_id":"t","creditable":true}]}"#.utf8))
        #expect(without.transactions.first?.isUpgraded == nil)
        #expect(without.transactions.first?.shouldCredit == true)
    }
}
