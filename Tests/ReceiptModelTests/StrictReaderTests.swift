import ReceiptModel
import ServiceSupport
import Testing

/// What the strict readers of results and events (`VerificationResultJSON.read`, `PurchaseEventJSON.read`: the
/// ledger's) refuse, and the reason each gives: the ledger dead-letters the message with it, so a reason names the
/// member and never its value.
@Suite struct StrictReaderTests {
    static let transaction = #"{"credit_key":"k","transaction_id":"t","creditable":true}"#

    static func result(_ members: String) -> [UInt8] {
        Array(#"{"schema_version":1,"submission_id":"s","outcome":"verified"\#(members)}"#.utf8)
    }

    static func event(_ members: String) -> [UInt8] {
        Array(#"{"schema_version":1,"event_id":"e","type":"credit"\#(members)}"#.utf8)
    }

    static let refusedResults: [(String, [UInt8], String)] = [
        ("not JSON", Array("{".utf8), "malformed JSON"),
        ("a duplicate member", result(#","outcome":"verified""#), "malformed JSON"),
        ("not an object", Array("[]".utf8), "not a JSON object"),
        ("another schema version", Array(#"{"schema_version":2,"submission_id":"s","outcome":"verified"}"#.utf8),
         "unknown schema_version 2"),
        ("no schema version", Array(#"{"submission_id":"s","outcome":"verified"}"#.utf8), "missing schema_version"),
        ("no submission id", Array(#"{"schema_version":1,"outcome":"verified"}"#.utf8), "missing submission_id"),
        ("a number for a string", result(#","user_id":7"#), "wrong type at user_id"),
        ("a transaction's member of the wrong type", result(#","transactions":[{"credit_key":"k","quantity":"1"}]"#),
         "wrong type at transactions.0.quantity"),
        ("a transaction without a key", result(#","transactions":[{"transaction_id":"t"}]"#),
         "missing transactions.0.credit_key"),
        ("a transaction that is no object", result(#","transactions":[1]"#), "wrong type at transactions.0"),
        ("transactions that are no list", result(#","transactions":{}"#), "wrong type at transactions"),
        ("a control character in an id", result(#","user_id":"victim\u0000x""#),
         "user_id contains the control character U+0000 (identifiers may not hold C0, DEL or C1 control "
            + "characters; nothing is truncated)"),
        ("a control character in a transaction's id", result(#","transactions":[{"credit_key":"k\u007F"}]"#),
         "transaction.credit_key contains the control character U+007F (identifiers may not hold C0, DEL or C1 "
            + "control characters; nothing is truncated)"),
        // The first problem in reading order decides: the transactions are read before verified_at_ms.
        ("two problems", result(#","transactions":[{"credit_key":"k","product_id":"p\u0001"}],"verified_at_ms":"x""#),
         "transaction.product_id contains the control character U+0001 (identifiers may not hold C0, DEL or C1 "
            + "control characters; nothing is truncated)"),
    ]

    @Test func refusedResultsNameTheirFirstProblem() {
        for (name, bytes, reason) in Self.refusedResults {
            do {
                let read = try VerificationResultJSON.read(bytes)
                Issue.record("\(name): read as \(read)")
            } catch {
                #expect(error.description == reason, "\(name)")
            }
        }
    }

    static let refusedEvents: [(String, [UInt8], String)] = [
        ("a duplicate member", event(#","type":"debit""#), "malformed JSON"),
        ("an empty event id", Array(#"{"schema_version":1,"event_id":"","type":"credit"}"#.utf8), "event_id is empty"),
        ("no type", Array(#"{"schema_version":1,"event_id":"e"}"#.utf8), "missing type"),
        ("a transaction that is no object", event(#","transaction":"t""#), "wrong type at transaction"),
        ("a transaction's member of the wrong type", event(#","transaction":{"credit_key":"k","creditable":1}"#),
         "wrong type at transaction.creditable"),
        ("a status of the wrong type", event(#","subscription_status":"1""#), "wrong type at subscription_status"),
        ("a control character in the app transaction id", event(#","app_transaction_id":"a\u0085""#),
         "app_transaction_id contains the control character U+0085 (identifiers may not hold C0, DEL or C1 "
            + "control characters; nothing is truncated)"),
    ]

    @Test func refusedEventsNameTheirFirstProblem() {
        for (name, bytes, reason) in Self.refusedEvents {
            do {
                let read = try PurchaseEventJSON.read(bytes)
                Issue.record("\(name): read as \(read)")
            } catch {
                #expect(error.description == reason, "\(name)")
            }
        }
    }

    /// What a newer producer may add or leave out is read past, not refused: unknown members, an outcome, type or
    /// product type this build does not know, absent optional members (null and absent read alike).
    @Test func whatANewerProducerAddsIsReadPast() throws {
        let read = try VerificationResultJSON.read(
            Self.result(
                #","outcome_detail":{"x":1},"user_id":null,"transactions":[{"credit_key":"k","product_type":"Future","#
                    + #""credit":{"item":"gems","amount":5},"future_member":[1,2]}]"#))
        #expect(read.userId == nil && read.transactions.count == 1)
        #expect(read.transactions[0].productType == "Future" && read.transactions[0].creditable == false)
        #expect(read.transactions[0].credit == JSONValue.object(["item": .string("gems"), "amount": .integer(5)]))
        #expect(read.transactions[0].quantity == nil && read.verifiedAtMs == nil)
        let unknownOutcome = try VerificationResultJSON.read(
            Array(#"{"schema_version":1,"submission_id":"s","outcome":"deferred"}"#.utf8))
        #expect(unknownOutcome.outcome == "deferred" && unknownOutcome.transactions.isEmpty)
        let event = try PurchaseEventJSON.read(Self.event(#","renewal":{"renewal_price":1},"transaction":null"#))
        #expect(event.type == "credit" && event.transaction == nil && event.subscriptionStatus == nil)
    }
}
