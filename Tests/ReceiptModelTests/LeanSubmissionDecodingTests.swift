import Foundation
import ServiceSupport
import TestSupport
import Testing

@testable import ReceiptModel

/// `Submission.decodeValidated(from:)` reads with the lean `JSONParser` where `Submission.leanMembers` allows, with
/// Foundation otherwise; `decodeValidatedWithFoundation(from:)` is the oracle. For every body here both must give the
/// same submission or the same `MalformedSubmission` (problem text and echoed ids included), and the lean reading
/// must be taken exactly where expected: for every body whose numbers are plain Int64 integers, and for no other.
@Suite struct LeanSubmissionDecodingTests {
    typealias Outcome = Result<Submission, MalformedSubmission>

    static func outcome(_ body: () throws(MalformedSubmission) -> Submission) -> Outcome {
        do { return .success(try body()) } catch { return .failure(error) }
    }

    /// Checks one body: the production path equals the oracle, and the lean reading (when taken) does too.
    static func check(_ bytes: [UInt8], lean expectedLean: Bool, sourceLocation: SourceLocation = #_sourceLocation) {
        let text = String(decoding: bytes, as: UTF8.self)
        let oracle = outcome { () throws(MalformedSubmission) in
            try Submission.decodeValidatedWithFoundation(from: bytes)
        }
        let production = outcome { () throws(MalformedSubmission) in try Submission.decodeValidated(from: bytes) }
        #expect(production == oracle, "\(text)", sourceLocation: sourceLocation)
        let members = Submission.leanMembers(bytes)
        #expect((members != nil) == expectedLean, "lean reading taken: \(members != nil) for \(text)",
            sourceLocation: sourceLocation)
        if let members {
            let lean = outcome { () throws(MalformedSubmission) in try Submission.validated(members: members) }
            #expect(lean == oracle, "\(text)", sourceLocation: sourceLocation)
        }
    }

    static let jws = "eyJhbGciOiJFUzI1NiIsIng1YyI6WyJBQUFBIl19.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.c2lnbmF0dXJl"

    /// Valid submissions of each proof kind, every number a plain integer.
    static let bases: [[(String, String)]] = [
        [("schema_version", "1"), ("submission_id", #""s-1""#), ("receipt_data", #""TUlJVGFn""#),
         ("order_id", #""o-9""#), ("user_id", #""u-3""#), ("submitted_at_ms", "1700000000000")],
        [("schema_version", "1"), ("submission_id", #""s-2""#), ("transaction_id", #""2000000123456789""#),
         ("expected_product_id", #""gems""#), ("client_id", #""billing""#)],
        [("submission_id", #""s-3""#), ("signed_transaction", "\"\(jws)\""), ("schema_version", "1"),
         ("expected_app_account_token", #""7E3FB20B-4CDB-47CC-936D-99D65F608138""#)],
        [("schema_version", "1"), ("submission_id", "17"), ("signed_app_transaction", "\"\(jws)\"")],
    ]

    static let fields = [
        "schema_version", "submission_id", "receipt_data", "signed_transaction", "transaction_id",
        "signed_app_transaction", "client_id", "order_id", "user_id", "expected_transaction_id", "expected_product_id",
        "expected_app_account_token", "submitted_at_ms",
    ]

    /// JSON values read the same by both parsers, so the lean reading is taken.
    static let plainValues = [
        "null", "true", "false", "0", "1", "2", "-1", "-0", "42", "1700000000000", "2000000123456789",
        "8999999999999999", "9000000000000000", "-8999999999999999", "-9000000000000000", "9223372036854775807",
        "-9223372036854775808", "18446744073709551", #""""#, #""s""#, #""1""#, #"" 1 ""#, #""42""#, #""-1""#,
        #""0042""#, #""2000000123456789""#, #""18446744073709551615""#, #""18446744073709551616""#, #""YQ==""#,
        #""Y\nQ==""#, #""YQ==\r\n""#, #""  TUlJ VGFn\t""#, #""%%""#, #""YQ=""#, #""a-b_""#, #""\u00e9""#, #""é""#,
        #""Jürgen 🎮 ユーザー""#, #""\ud83c\udfae""#, #""\u0000""#, #""a\u0000b""#, #""\u001f""#, #""\u007f""#,
        #""\u0085""#, #""\u00a0""#, #""a\/b""#, #""\"q\"""#, #""\\""#, #""\uFFFF""#, #""\uFEFF1""#, #""٣""#,
        #""２０００""#, "\"\(jws)\"", "\" \(jws)\\n\"", #""a.b""#,
        #""eyJhbGciOiJub25lIn0.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.c2ln""#,
        #""7e3fb20b-4cdb-47cc-936d-99d65f608138""#, #""7E3FB20B4CDB47CC936D99D65F608138""#, #""nope""#,
        "\"\(String(repeating: "x", count: 256))\"", "\"\(String(repeating: "x", count: 257))\"",
        "\"\(String(repeating: "u", count: 512))\"", "\"\(String(repeating: "u", count: 513))\"",
        "\"\(String(repeating: "é", count: 256))\"", "[]", "{}", "[1]", #"{"a":1}"#, #"["s"]"#, "[[[[]]]]",
    ]

    /// Numbers Foundation reads as doubles or decimals: left to Foundation (the lean reading is not taken).
    static let otherNumbers = [
        "1.0", "1e3", "1E0", "1e+0", "-0.0", "0.0", "1.5", "-1.5", "0.99999999999999999999", "1.00000000000000000001",
        "8999999999999999.5", "9000000000000000.0", "1e-400", "1e400", "-1e400", "9223372036854775808",
        "-9223372036854775809", "18446744073709551615", "18446744073709551616", "100000000000000000000",
        "2000000123456789.0", "2e15", "1.7e12",
    ]



    @Test func everyFieldWithEveryPlainValueReadsAsFoundationReadsIt() {
        for base in Self.bases {
            Self.check(JSONObjectText.body(base), lean: true)
            for field in Self.fields {
                for value in Self.plainValues { Self.check(JSONObjectText.setting(base, field, value), lean: true) }
            }
        }
    }

    @Test func otherNumbersAreLeftToFoundation() {
        for base in Self.bases {
            for field in Self.fields + ["unknown"] {
                for value in Self.otherNumbers { Self.check(JSONObjectText.setting(base, field, value), lean: false) }
            }
            // Anywhere in the body, even nested in a field nobody reads.
            Self.check(JSONObjectText.setting(base, "extra", #"{"a":[1,{"b":1.5}]}"#), lean: false)
        }
    }

    /// Whole bodies: what the lean parser refuses (Foundation decides), and what it reads.
    @Test(arguments: [
        // Duplicates (Foundation keeps the last), also canonically equivalent names and escaped names.
        (#"{"schema_version":1,"submission_id":"a","submission_id":"b","receipt_data":"YQ=="}"#, false),
        (#"{"schema_version":1,"submission_id":"a","receipt_data":"YQ==","receipt_data":"%%"}"#, false),
        (#"{"schema_version":1,"submission_id":"a","receipt_data":"YQ==","x":1,"x":2}"#, false),
        (#"{"schema_version":1,"submission_id":"a","receipt_data":"YQ==","é":1,"e\u0301":2}"#, false),
        (#"{"schema_version":1,"submission_id":"a","receipt_data":"YQ==","submission\u005fid":"b"}"#, false),
        (#"{"schema_version":1,"submission\u005fid":"a","receipt_data":"YQ=="}"#, true),
        (#"{"schema_version":1,"submission_id":"a","receipt_data":"YQ==","user_id":"u",}"#, false),
        (#"{"schema_version":1,"submission_id":"a","receipt_data":"YQ==","user_id":"\ud800"}"#, false),
        (#"{"schema_version":1,"submission_id":"a","receipt_data":"YQ==","user_id":"\udc00x"}"#, false),
        (#"{"schema_version":1,"submission_id":"a","receipt_data":"YQ==","user_id":"\x"}"#, false),
        (#"{"schema_version":01,"submission_id":"a","receipt_data":"YQ=="}"#, false),
        (#"{"schema_version":+1,"submission_id":"a","receipt_data":"YQ=="}"#, false),
        (#"{"schema_version":1,"submission_id":"a","receipt_data":"YQ==","user_id":nul}"#, false),
        (#"{"schema_version":1,"submission_id":"a","receipt_data":"YQ=="} x"#, false),
        (#"{"schema_version":1,"submission_id":"a","receipt_data":"YQ=="}{}"#, false),
        (" \r\n\t{\"schema_version\":1,\"submission_id\":\"a\",\"receipt_data\":\"YQ==\"}\n ", true),
        ("{\"schema_version\":1,\"submission_id\":\"a\",\"receipt_data\":\"YQ==\",\"user_id\":\"a\tb\"}", false),
        ("{\"schema_version\":1,\"submission_id\":\"a\",\"receipt_data\":\"YQ==\"}\u{0}", false),
        ("\u{FEFF}{\"schema_version\":1,\"submission_id\":\"a\",\"receipt_data\":\"YQ==\"}", false),
        // Not objects, or not JSON.
        ("[1,2]", false), ("[]", false), ("1", false), ("\"s\"", false), ("null", false), ("true", false),
        ("", false), ("   ", false), ("{", false), ("{not json", false), ("{}", true), (#"{"":1}"#, true),
        (#"{"schema_version":1}"#, true), (#"{"submission_id":"s","receipt_data":"YQ=="}"#, true),
        // Deep nesting in a field nobody reads: 64 levels are read, 65 are left to Foundation.
        (#"{"schema_version":1,"submission_id":"a","receipt_data":"YQ==","x":"#
            + String(repeating: "[", count: 63) + String(repeating: "]", count: 63) + "}", true),
        (#"{"schema_version":1,"submission_id":"a","receipt_data":"YQ==","x":"#
            + String(repeating: "[", count: 64) + String(repeating: "]", count: 64) + "}", false),
        (#"{"schema_version":1,"submission_id":"a","receipt_data":"YQ==","x":"#
            + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}", false),
    ])
    func wholeBodies(body: String, lean: Bool) {
        Self.check(Array(body.utf8), lean: lean)
    }

    /// Bodies in other encodings (Foundation detects UTF-16 and UTF-32, with or without a BOM) and invalid UTF-8.
    @Test func otherEncodingsAndInvalidUTF8AreLeftToFoundation() {
        let text = #"{"schema_version":1,"submission_id":"s-é","receipt_data":"YQ==","user_id":"ü"}"#
        var encodings: [[UInt8]] = []
        for encoding in [String.Encoding.utf16, .utf16LittleEndian, .utf16BigEndian, .utf32, .utf32LittleEndian] {
            encodings.append(Array(text.data(using: encoding)!))
        }
        encodings.append([0xEF, 0xBB, 0xBF] + Array(text.utf8))
        for bytes in encodings { Self.check(bytes, lean: false) }
        let prefix = Array(#"{"schema_version":1,"submission_id":"s","receipt_data":"YQ==","user_id":""#.utf8)
        let invalidSequences: [[UInt8]] = [
            [0xFF], [0xC3], [0xC3, 0x28], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xC0, 0xAF],
        ]
        for invalid in invalidSequences {
            Self.check(prefix + invalid + Array("\"}".utf8), lean: false)
        }
        // Valid UTF-8 of every length is read by both.
        Self.check(prefix + Array("é日😀\"}".utf8), lean: true)
    }

    /// A receipt of realistic size, plain and with the line breaks `base64EncodedString` writes on request.
    @Test func realisticReceipts() {
        let bytes = (0..<1_536).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let optionSets: [Data.Base64EncodingOptions] = [
            [], [.lineLength64Characters], [.lineLength76Characters, .endLineWithLineFeed],
        ]
        for options in optionSets {
            let receipt = Data(bytes).base64EncodedString(options: options)
                .replacingOccurrences(of: "\r", with: "\\r").replacingOccurrences(of: "\n", with: "\\n")
            Self.check(
                Array(#"{"schema_version":1,"submission_id":"s","receipt_data":"\#(receipt)","user_id":"u"}"#.utf8),
                lean: true)
        }
    }
}
