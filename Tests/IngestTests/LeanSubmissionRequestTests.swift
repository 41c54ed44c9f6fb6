import Foundation
import ReceiptModel
import TestSupport
import Testing

@testable import Ingest

/// `SubmissionRequest.parse(_:)` reads with the lean `JSONParser` where `Submission.leanMembers` allows, with
/// Foundation otherwise; `parseWithFoundation(_:)` is the oracle. For every body here both must give the same request
/// or the same `APIError` (code and message included), and the lean reading must be taken exactly where expected:
/// for every body whose numbers are plain Int64 integers, and for no other.
@Suite("POST /v1/receipts: the lean reading decides as Foundation's")
struct LeanSubmissionRequestTests {
    typealias Outcome = Result<SubmissionRequest, APIError>

    static func outcome(_ body: () throws(APIError) -> SubmissionRequest) -> Outcome {
        do { return .success(try body()) } catch { return .failure(error) }
    }

    static func check(_ bytes: [UInt8], lean expectedLean: Bool, sourceLocation: SourceLocation = #_sourceLocation) {
        let text = String(decoding: bytes, as: UTF8.self)
        let oracle = outcome { () throws(APIError) in try SubmissionRequest.parseWithFoundation(bytes) }
        let production = outcome { () throws(APIError) in try SubmissionRequest.parse(bytes) }
        #expect(production == oracle, "\(text)", sourceLocation: sourceLocation)
        #expect((Submission.leanMembers(bytes) != nil) == expectedLean, "lean reading for \(text)",
            sourceLocation: sourceLocation)
    }

    /// Valid bodies: contract fields, the seed iOS client's aliases, each proof kind.
    static let bases: [[(String, String)]] = [
        [("receipt_data", #""aGVsbG8=""#), ("submission_id", #""s-1""#), ("order_id", #""o-1""#),
         ("user_id", #""u-1""#), ("expected_transaction_id", #""1000""#)],
        [("sandbox", #""0""#), ("receipt", "\"\(seedClientReceipt)\""), ("orderNo", #""20240501123456789""#),
         ("transactionId", #""1000000912345678""#)],
        [("transaction_id", "2000000123456789"), ("expected_product_id", #""p""#), ("sandbox", "true")],
        [("signed_transaction", "\"\(sampleJWS)\""),
         ("expected_app_account_token", #""7E3FB20B-4CDB-47CC-936D-99D65F608138""#)],
        [("signed_app_transaction", "\" \(sampleJWS)\\n\""), ("user_id", "42")],
    ]

    static let fields = [
        "receipt_data", "receipt", "signed_transaction", "transaction_id", "signed_app_transaction", "submission_id",
        "order_id", "orderNo", "user_id", "expected_transaction_id", "transactionId", "expected_product_id",
        "expected_app_account_token", "sandbox",
    ]

    /// JSON values read the same by both parsers, so the lean reading is taken.
    static let plainValues = [
        "null", "true", "false", "0", "1", "2", "-1", "-0", "42", "1000", "2000000123456789", "8999999999999999",
        "9000000000000000", "-8999999999999999", "9223372036854775807", "-9223372036854775808", #""""#, #""0""#,
        #""1""#, #"" 1 ""#, #""true""#, #""FALSE""#, #""yes""#, #""01""#, #""--""#, #""1000""#, #""0042""#,
        #""18446744073709551615""#, #""18446744073709551616""#, #""aGVsbG8=""#, #""aGVs\nbG8=""#,
        #""aGVs\r\nbG8g d29y bGQ=""#, #""   ""#, #""not base64!""#, #""abc""#, #""YQ=""#, #""%%""#, #""\u00e9""#,
        #""é""#, #""Jürgen 🎮""#, #""注文 1""#, #""\ud83c\udfae""#, #""\u0000""#, #""victim\u0000x""#,
        #""\u001b""#, #""\u007f""#, #""\u0080""#, #""\u009f""#, #""\u00a0""#, #""a\/b""#, #""\"q\"""#, #""\\""#,
        #""\uFFFF""#, #""٣""#, #""２０００""#, "\"\(sampleJWS)\"", "\" \(sampleJWS)\\n\"", "\"\\t\(sampleJWS) \"",
        #""eyJhbGciOiJIUzI1NiJ9.eyJ0eCI6MX0.c2ln""#, #""eyJhbGciOiJub25lIn0.eyJ0eCI6MX0.c2ln""#,
        #""eyJhbGciOiJFUzI1NiJ9.eyJ0eCI6MX0.c2l+""#, #""eyJ\nhbGciOiJFUzI1NiJ9.eyJ0eCI6MX0.c2ln""#, #""eyJ""#,
        #""abc.def""#, #""a.b.c.d""#, #""7e3fb20b-4cdb-47cc-936d-99d65f608138""#, #""not-a-uuid""#,
        "\"\(String(repeating: "x", count: 512))\"", "\"\(String(repeating: "x", count: 513))\"",
        "\"\(String(repeating: "é", count: 256))\"", "\"\(String(repeating: "é", count: 257))\"",
        "[]", "{}", "[1]", #"{"a":1}"#, #"["p"]"#,
    ]

    /// Numbers Foundation reads as doubles or decimals: left to Foundation.
    static let otherNumbers = [
        "1.0", "0.0", "-0.0", "1e0", "1E0", "1e3", "1.5", "0.99999999999999999999", "1.00000000000000000001",
        "8999999999999999.5", "1e-400", "1e400", "9223372036854775808", "-9223372036854775809",
        "18446744073709551615", "100000000000000000000", "2000000123456789.0", "2e15",
    ]



    @Test("every field with every plain value reads as Foundation reads it")
    func plainValues() {
        for base in Self.bases {
            Self.check(JSONObjectText.body(base), lean: true)
            for field in Self.fields {
                for value in Self.plainValues { Self.check(JSONObjectText.setting(base, field, value), lean: true) }
            }
        }
    }

    @Test("numbers with a fraction, an exponent or beyond Int64 are left to Foundation")
    func otherNumbers() {
        for base in Self.bases {
            for field in Self.fields + ["unknown"] {
                for value in Self.otherNumbers { Self.check(JSONObjectText.setting(base, field, value), lean: false) }
            }
        }
    }

    @Test("whole bodies: what the lean parser refuses is Foundation's to decide", arguments: [
        (#"{"receipt_data":"aGVsbG8=","receipt_data":"d29ybGQ="}"#, false),
        (#"{"receipt":"aGVsbG8=","user_id":"a","user_id":"b"}"#, false),
        (#"{"receipt":"aGVsbG8=","sandbox":"0","sandbox":"yes"}"#, false),
        (#"{"receipt":"aGVsbG8=","é":1,"e\u0301":2}"#, false),
        (#"{"receipt":"aGVsbG8=","user\u005fid":"u","user_id":"v"}"#, false),
        (#"{"receipt":"aGVsbG8=","user\u005fid":"u"}"#, true),
        (#"{"receipt":"aGVsbG8=","orderNo":"o",}"#, false),
        (#"{"receipt":"aGVsbG8=","user_id":"\ud800"}"#, false),
        (#"{"receipt":"aGVsbG8=","sandbox":01}"#, false),
        (#"{"receipt":"aGVsbG8="} x"#, false),
        ("{\"receipt\":\"aGVsbG8=\"}\u{0}", false),
        ("{\"receipt\":\"aGVs\nbG8=\"}", false),
        ("\u{FEFF}{\"receipt\":\"aGVsbG8=\"}", false),
        (" \r\n{\"receipt\":\"aGVsbG8=\"}\t", true),
        ("not json", false), ("[1,2]", false), ("[]", false), ("1", false), ("\"s\"", false), ("null", false),
        ("", false), ("{}", true), (#"{"order_id":"o"}"#, true),
        (#"{"receipt":"aGVsbG8=","x":"# + String(repeating: "[", count: 63) + String(repeating: "]", count: 63) + "}",
         true),
        (#"{"receipt":"aGVsbG8=","x":"# + String(repeating: "[", count: 64) + String(repeating: "]", count: 64) + "}",
         false),
    ])
    func wholeBodies(body: String, lean: Bool) {
        Self.check(Array(body.utf8), lean: lean)
    }

    @Test("UTF-16 and UTF-32 bodies (with or without a BOM) and invalid UTF-8 are Foundation's to decide")
    func otherEncodings() {
        let text = seedClientBody(sandbox: "0")
        for encoding in [String.Encoding.utf16, .utf16LittleEndian, .utf16BigEndian, .utf32, .utf32BigEndian] {
            Self.check(Array(text.data(using: encoding)!), lean: false)
        }
        Self.check([0xEF, 0xBB, 0xBF] + Array(text.utf8), lean: false)
        let prefix = Array(#"{"receipt":"aGVsbG8=","user_id":""#.utf8)
        for invalid: [UInt8] in [[0xFF], [0xC3], [0xED, 0xA0, 0x80], [0xC0, 0xAF]] {
            Self.check(prefix + invalid + Array("\"}".utf8), lean: false)
        }
    }

    @Test("the existing suites' bodies read the same both ways")
    func existingBodies() {
        for body in SubmissionRequestTests.acceptedBodies { Self.check(Array(body.utf8), lean: true) }
    }
}
