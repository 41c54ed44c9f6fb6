import Foundation
import ServiceSupport
import Testing

@testable import AppStore

/// `VerifyReceiptResponse.decode` reads answers with the lean parser and falls back to Foundation's reading
/// (`decodeWithFoundation`, the reference) for whatever the lean reading cannot promise to read the same. These
/// tables hold the two equal: for every body, `decode` answers what `decodeWithFoundation` answers, and the lean
/// reading, where it answers at all, answers the same. The realistic bodies must not fall back (the speed is the
/// point); the odd ones may.
@Suite struct VerifyReceiptLeanReadingTests {
    /// What the lean reading alone makes of a body: nil when it defers (or the strict parser refuses the body).
    static func leanReading(_ body: [UInt8]) -> VerifyReceiptResponse? {
        guard case .object(let members)? = try? JSONParser.parse(body) else { return nil }
        return try? VerifyReceiptResponse(lean: members)
    }

    static func result(_ read: () throws(VerifyReceiptDecodingError) -> VerifyReceiptResponse)
        -> Result<VerifyReceiptResponse, VerifyReceiptDecodingError>
    {
        do throws(VerifyReceiptDecodingError) { return .success(try read()) } catch { return .failure(error) }
    }

    /// Checks one body; answers whether the lean reading handled it.
    @discardableResult
    static func expectSameReading(_ json: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        expectSameReading(Array(json.utf8), label: json, sourceLocation: sourceLocation)
    }

    @discardableResult
    static func expectSameReading(
        _ body: [UInt8], label: String, sourceLocation: SourceLocation = #_sourceLocation
    ) -> Bool {
        let reference = result { () throws(VerifyReceiptDecodingError) in
            try VerifyReceiptResponse.decodeWithFoundation(body)
        }
        let decoded = result { () throws(VerifyReceiptDecodingError) in try VerifyReceiptResponse.decode(body) }
        #expect(
            decoded == reference, "decode differs from Foundation's reading for \(label)",
            sourceLocation: sourceLocation)
        guard let lean = leanReading(body) else { return false }
        #expect(.success(lean) == reference, "the lean reading differs for \(label)", sourceLocation: sourceLocation)
        return true
    }

    /// A valid answer whose one `in_app` transaction has `field` set to the raw JSON `value` (or, with nil, lacks it).
    static func answer(field: String, value: String?, status: String = "0") -> String {
        var members: [(String, String)] = [
            ("transaction_id", #""1000000739289145""#), ("original_transaction_id", #""1000000723811158""#),
            ("product_id", #""gems_100""#), ("quantity", #""1""#), ("purchase_date_ms", #""1602065218000""#),
            ("expires_date_ms", #""1602068818000""#), ("web_order_line_item_id", #""1000000056284415""#),
            ("is_trial_period", #""false""#), ("in_app_ownership_type", #""PURCHASED""#),
        ]
        members.removeAll { $0.0 == field }
        if let value { members.append((field, value)) }
        let transaction = "{" + members.map { #""\#($0.0)":\#($0.1)"# }.joined(separator: ",") + "}"
        let receipt = #"{"bundle_id":"com.example.game","in_app":[\#(transaction)]}"#
        return #"{"status":\#(status),"environment":"Production","receipt":\#(receipt),"#
            + #""latest_receipt_info":[\#(transaction)]}"#
    }

    /// JSON values of every shape and every odd number form, for any field.
    static let values: [String?] = [
        nil, "null", "true", "false", "0", "1", "2", "-1", "-0", "0.0", "1.0", "1.5", "1e3", "1E+3", "2.5e-1",
        "1602065218000", "1602065218000.0", "1.602065218e12", "9007199254740991", "9007199254740993",
        "0.99999999999999999999", "1.00000000000000000001", "-0.0", "1E0", "100e-2", "4.9e-324",
        "9223372036854775807", "9223372036854775808", "18446744073709551615", "1e400", "-9223372036854775808",
        #""""#, #"" ""#, #""0""#, #""1""#, #""5""#, #""true""#, #""TRUE""#, #"" yes ""#, #""no""#, #""maybe""#,
        #""1602065218000""#, #"" 1602065218000 ""#, #""1.6e12""#, #""1602065218000.5""#, #""9e18""#,
        #""2019-10-19 09:30:48 Etc/GMT""#, #""2019-10-19 02:30:48 America/Los_Angeles""#, #""not a date""#,
        #""gems\u00e9""#, #""\ud83d\ude00""#, #""a\"b\\c\/d""#, #""é""#, "[]", "[1]", "{}", #"{"a":1}"#,
    ]

    static let transactionFields = [
        "transaction_id", "original_transaction_id", "product_id", "quantity", "purchase_date_ms", "expires_date_ms",
        "expires_date", "cancellation_date_ms", "cancellation_date", "cancellation_date_pst", "cancellation_reason",
        "web_order_line_item_id", "in_app_ownership_type", "is_trial_period", "app_account_token", "is_upgraded",
    ]

    @Test func everyTransactionFieldWithEveryValueReadsAsFoundationReadsIt() {
        var leanCount = 0
        var total = 0
        for field in Self.transactionFields {
            for value in Self.values {
                total += 1
                if Self.expectSameReading(Self.answer(field: field, value: value)) { leanCount += 1 }
            }
        }
        // Only the numbers the lean reading does not promise (fractions, exponents past 2^53, beyond Int64) defer.
        #expect(leanCount > total * 3 / 4, "the lean reading handled \(leanCount) of \(total)")
    }

    @Test func statusAndTopLevelFieldsReadAsFoundationReadsThem() {
        for value in Self.values {
            Self.expectSameReading(#"{"status":\#(value ?? "null")}"#)
            Self.expectSameReading(#"{"status":21100,"is_retryable":\#(value ?? "null")}"#)
            Self.expectSameReading(#"{"status":21100,"is-retryable":\#(value ?? "null")}"#)
            Self.expectSameReading(#"{"status":21100,"is_retryable":null,"is-retryable":\#(value ?? "null")}"#)
            Self.expectSameReading(#"{"status":21007,"environment":\#(value ?? "null")}"#)
            Self.expectSameReading(#"{"status":0,"receipt":{"bundle_id":\#(value ?? "null"),"in_app":[]}}"#)
            Self.expectSameReading(#"{"status":0,"receipt":{"bid":\#(value ?? "null"),"in_app":[]}}"#)
        }
    }

    @Test func receiptAndListShapesReadAsFoundationReadsThem() {
        let transaction = #"{"transaction_id":"7","product_id":"p","purchase_date_ms":"1539946248000"}"#
        let receipts = [
            nil, "null", #""abc""#, "[]", "5", "{}", #"{"in_app":null}"#, #"{"in_app":{}}"#, #"{"in_app":"x"}"#,
            #"{"in_app":[]}"#, #"{"in_app":[null,5,"x",{},[],\#(transaction)]}"#,
            #"{"bundle_id":"b","in_app":[{"transaction_id":"","product_id":"p","purchase_date_ms":"1"}]}"#,
            #"{"bundle_id":"b","in_app":[{"transaction_id":"9","product_id":"p"}]}"#,
            #"{"bid":"b","transaction_id":"7","product_id":"p","purchase_date_ms":"1539946248000"}"#,
            #"{"bid":"b","transaction_id":null}"#, #"{"bundle_id":"b","in_app":5,"transaction_id":"7"}"#,
        ]
        let lists = [
            nil, "null", "[]", #""x""#, "5", "{}", "[null]", transaction, "[\(transaction),\(transaction)]",
            #"[{"transaction_id":"8"}]"#,
        ]
        for status in ["0", "21006", "21007", "21100", #""0""#] {
            for receipt in receipts {
                for latest in lists {
                    for expired in [nil, transaction] {
                        var members = [#""status":\#(status)"#]
                        if let receipt { members.append(#""receipt":\#(receipt)"#) }
                        if let latest { members.append(#""latest_receipt_info":\#(latest)"#) }
                        if let expired { members.append(#""latest_expired_receipt_info":\#(expired)"#) }
                        Self.expectSameReading("{" + members.joined(separator: ",") + "}")
                    }
                }
            }
        }
    }

    @Test func realAnswersAreReadByTheLeanReading() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../fuzz/corpus/fuzz-verifyreceipt-response")
        let realAnswer = "verifyreceipt-subscription-42-transactions.json"
        var bodies = [(realAnswer, try Data(contentsOf: fixtures.appendingPathComponent(realAnswer)))]
        for name in try FileManager.default.contentsOfDirectory(atPath: corpus.path).sorted() {
            bodies.append((name, try Data(contentsOf: corpus.appendingPathComponent(name))))
        }
        #expect(bodies.count >= 6)
        for (name, body) in bodies {
            #expect(Self.expectSameReading(Array(body), label: name), "\(name) fell back to Foundation")
        }
        // And the shapes the fake App Store answers (the benchmarks' and the integration tests' answers).
        let token = #""5f6a0e5e-8d4b-4b41-9b8e-d3b1c7e4a001""#
        #expect(Self.expectSameReading(Self.answer(field: "app_account_token", value: token)))
    }

    @Test func bodiesTheStrictParserRefusesAreReadByFoundation() throws {
        let refusedByTheLeanParser = [
            #"{"status":0,"status":21007}"#,  // duplicate member
            #"{"status":0,"receipt":{"bundle_id":"a","bundle_id":"b","in_app":[]}}"#,
            "{\"status\":0,\"environment\":\"\u{0}\"}",
            #"{"status":0,}"#, "", "   ", "[]", "null", #"{"status":0} x"#,
        ]
        for json in refusedByTheLeanParser {
            #expect(!Self.expectSameReading(json), "the lean reading took \(json)")
        }
        // UTF-16 with a byte order mark: refused by both (Apple answers UTF-8; the reference wants a `{` first).
        var utf16: [UInt8] = [0xFE, 0xFF]
        for unit in #"{"status":21007}"#.utf16 { utf16 += [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
        #expect(!Self.expectSameReading(utf16, label: "UTF-16"))
        #expect(throws: VerifyReceiptDecodingError.notJSON) { try VerifyReceiptResponse.decode(utf16) }
    }
}
