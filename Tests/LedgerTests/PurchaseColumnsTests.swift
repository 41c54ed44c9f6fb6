@testable import Ledger
import LedgerRules
import Postgres
import Testing

/// The one list of `purchases` columns the batch copies, updates and reads (`BatchWork.purchaseTable`), against the
/// table the migrations make; and a purchase read by column name, whatever the order of the SELECT list.
@Suite struct PurchaseColumnsTests {
    typealias F = LedgerFixtures

    @Test func theListNamesEveryColumnOfPurchasesWithItsType() throws {
        let db = try LedgerDatabase("ledger_purchase_columns")
        let stored = try db.connection.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'purchases'"
        ).rows.map { row throws(PostgresError) in
            "\(try row.string("column_name")) \(try row.string("data_type"))"
        }
        #expect(Set(stored) == Set(BatchWork.purchaseTable.map { "\($0.name) \($0.sqlType)" }))
        #expect(stored.count == BatchWork.purchaseTable.count)
    }

    @Test func aPurchaseReadsTheSameWhateverTheOrderOfTheSelectList() throws {
        let db = try LedgerDatabase("ledger_purchase_read")
        let transaction = F.transaction(creditKey: "k1", originalTransactionId: "o1", quantity: 3)
        // Copied in as new, then updated from arrays.
        try db.applyResults(F.result(submissionId: "s1", userId: "u1", transactions: [transaction]))
        try db.applyEvents(F.event(eventId: "e1", type: "debit", transaction: transaction))
        let reversed = BatchWork.purchaseTable.reversed().map(\.name).joined(separator: ", ")
        var states: [PurchaseState] = []
        for select in [BatchWork.selectPurchases, "SELECT \(reversed) FROM purchases"] {
            let row = try #require(
                try db.connection.execute(select + " WHERE credit_key = $1", [.text(F.key("k1"))]).rows.first)
            states.append(try BatchWork.readState(row, at: BatchWork.PurchasePositions(row.columns), F.key("k1")))
        }
        #expect(states[0] == states[1])
        #expect(states[0].status == .debited)
        #expect(states[0].owner == "u1")
        #expect(states[0].grant == .item(name: "gems", amount: 100))
        #expect(states[0].quantity == 3)
        #expect(states[0].amountCredited == 300)
        #expect(states[0].amountDebited == 300)
        #expect(states[0].productKind == .consumable, "the credited transaction's product_type is kept")
    }

    /// A batch's new purchases are inserted from arrays when few and copied when many
    /// (`BatchWork.copyThreshold`): both paths store the same row.
    @Test func aNewPurchaseReadsTheSameWhetherInsertedOrCopied() throws {
        let db = try LedgerDatabase("ledger_purchase_insert_copy")
        let few = F.transaction(creditKey: "few-0", originalTransactionId: "few-0", quantity: 2)
        try db.applyResults(F.result(submissionId: "s-few", userId: "u1", transactions: [few]))
        let many = (0..<BatchWork.copyThreshold).map {
            F.transaction(creditKey: "many-\($0)", originalTransactionId: "many-\($0)", quantity: 2)
        }
        try db.applyResults(F.result(submissionId: "s-many", userId: "u1", transactions: many))
        var states: [PurchaseState] = []
        for key in ["few-0", "many-0"] {
            let row = try #require(
                try db.connection.execute(BatchWork.selectPurchases + " WHERE credit_key = $1", [.text(F.key(key))])
                    .rows.first)
            states.append(try BatchWork.readState(row, at: BatchWork.PurchasePositions(row.columns), F.key(key)))
        }
        // Applied one call apart: the test database's clock stepped between them.
        #expect(states[0].creditedAtMs != nil && states[1].creditedAtMs != nil)
        var copied = states[1]
        copied.creditedAtMs = states[0].creditedAtMs
        #expect(states[0] == copied)
        #expect(states[0].status == .credited)
        #expect(states[0].amountCredited == 200)
        #expect(try db.connection.execute("SELECT count(*) AS n FROM purchases").rows[0].int64("n")
            == Int64(1 + BatchWork.copyThreshold))
    }
}
