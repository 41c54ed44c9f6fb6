import Foundation
import Ingest
import ReceiptModel
import Testing

/// A StoreKit 2 signed transaction's shape (header `{"alg":"ES256"}`), for bodies; nothing here verifies it.
let sampleJWS = "eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMTAwMCJ9.c2lnbmF0dXJl"

/// The exact payload the seed iOS client (`../shared/background/000_c216de7eef98bcb3.txt`, `ApplePayUtils`) posts:
/// `["sandbox": _sandBox ? "0" : "1", "receipt": base64, "orderNo": _otn, "transactionId": _tId]`, every value a
/// string, serialized by JSONSerialization.
func seedClientBody(sandbox: String) -> String {
    #"{"sandbox":"\#(sandbox)","receipt":"\#(seedClientReceipt)","orderNo":"20240501123456789","#
        + #""transactionId":"1000000912345678"}"#
}

/// The base64 app receipt in `seedClientBody` (`base64EncodedString(options: 0)`: one line).
let seedClientReceipt = "MIIT0QYJKoZIhvcNAQcCoIITwjCCE74CAQExCzAJBgUrDgMCGgUAMIIDcgYJKoZIhvcNAQcBoIIDYwSCA18xggNb"

@Suite("POST /v1/receipts body parsing")
struct SubmissionRequestTests {
    private func parse(_ json: String) throws(APIError) -> SubmissionRequest {
        try SubmissionRequest.parse(Array(json.utf8))
    }

    /// The error for `json`, nil when accepted.
    private func error(_ json: String) -> APIError? {
        do {
            _ = try parse(json)
            return nil
        } catch {
            #expect(error.status == 400)
            return error
        }
    }

    private func code(_ json: String) -> String? { error(json)?.code }

    @Test("contract fields are taken as given")
    func contractFields() throws {
        let request = try parse(
            """
            {"receipt_data":"aGVsbG8=","order_id":"o-1","user_id":"u-1","expected_transaction_id":"1000",
             "expected_product_id":"com.example.gems","submission_id":"s-1","unknown":{"ignored":true},
             "expected_app_account_token":"7E3FB20B-4CDB-47CC-936D-99D65F608138"}
            """)
        #expect(
            request
                == SubmissionRequest(
                    submissionId: "s-1", proof: .receipt("aGVsbG8="), orderId: "o-1", userId: "u-1",
                    expectedTransactionId: "1000", expectedProductId: "com.example.gems",
                    expectedAppAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138"))
    }

    @Test("the four kinds of proof", arguments: [
        (#"{"receipt_data":"aGVsbG8="}"#, PurchaseProof.receipt("aGVsbG8=")),
        (#"{"signed_app_transaction":"\t\#(sampleJWS) "}"#, .signedAppTransaction(sampleJWS)),
        (#"{"receipt":"aGVs\nbG8="}"#, .receipt("aGVsbG8=")),
        (#"{"signed_transaction":"  \#(sampleJWS)\n"}"#, .signedTransaction(sampleJWS)),
        (#"{"transaction_id":"2000000123456789"}"#, .transactionId("2000000123456789")),
        (#"{"transaction_id":2000000123456789}"#, .transactionId("2000000123456789")),
        (#"{"transaction_id":"18446744073709551615"}"#, .transactionId("18446744073709551615")),
        (#"{"transaction_id":"0"}"#, .transactionId("0")),
        // A JWS sent where the receipt goes is taken as the signed transaction it is.
        (#"{"receipt_data":"\#(sampleJWS)"}"#, .signedTransaction(sampleJWS)),
        (#"{"receipt":"\#(sampleJWS)","transactionId":"1000"}"#, .signedTransaction(sampleJWS)),
    ])
    func proofs(body: String, proof: PurchaseProof) throws {
        #expect(try parse(body).proof == proof)
    }

    @Test("the seed iOS client's exact payload is accepted, sandbox \"0\" and \"1\" alike")
    func seedClient() throws {
        let sandbox = try parse(seedClientBody(sandbox: "0"))
        #expect(sandbox.proof == .receipt(seedClientReceipt))
        #expect(sandbox.orderId == "20240501123456789")
        #expect(sandbox.expectedTransactionId == "1000000912345678")
        #expect(sandbox.environmentHint == .sandbox)
        let production = try parse(seedClientBody(sandbox: "1"))
        #expect(production.environmentHint == .production)
        // A hint only: nothing of it reaches the submission.
        #expect(
            sandbox.submission(id: "i", submittedAtMs: 1) == production.submission(id: "i", submittedAtMs: 1))
    }

    @Test("the seed client's \"--\" (no transaction id from StoreKit) is no expectation, not a transaction to find")
    func seedClientWithoutTransactionId() throws {
        let body = seedClientBody(sandbox: "1").replacingOccurrences(of: "1000000912345678", with: "--")
        #expect(body.contains(#""transactionId":"--""#))
        let request = try parse(body)
        #expect(request.expectedTransactionId == nil)
        #expect(request.proof == .receipt(seedClientReceipt))
        // Only the iOS alias carries the placeholder: in the contract field it is a transaction id like any other.
        #expect(try parse(#"{"receipt":"aGVsbG8=","expected_transaction_id":"--"}"#).expectedTransactionId == "--")
        #expect(
            try parse(#"{"receipt":"aGVsbG8=","expected_transaction_id":"1000","transactionId":"--"}"#)
                .expectedTransactionId == "1000")
    }

    @Test("sandbox: strings, numbers and booleans are a hint; anything else is 400 naming it", arguments: [
        (#""0""#, AppStoreEnvironment?.some(.sandbox)), (#""1""#, .production), ("0", .sandbox), ("1", .production),
        ("true", .sandbox), ("false", .production), (#""true""#, .sandbox), (#""FALSE""#, .production),
        ("null", nil), (#""""#, nil),
    ])
    func sandboxHint(value: String, hint: AppStoreEnvironment?) throws {
        #expect(try parse(#"{"receipt":"aGVsbG8=","sandbox":\#(value)}"#).environmentHint == hint)
    }

    @Test("sandbox values that are no hint are refused", arguments: [
        #""yes""#, "2", "1.5", "[]", #"{"a":1}"#, #""01""#,
    ])
    func sandboxRefused(value: String) {
        let refused = error(#"{"receipt":"aGVsbG8=","sandbox":\#(value)}"#)
        #expect(refused?.code == "invalid_field")
        #expect(refused?.message.hasPrefix("sandbox") == true)
    }

    @Test("ids sent as JSON integers become their decimal text")
    func numericIds() throws {
        let request = try parse(#"{"receipt":"aGVsbG8=","orderNo":123456789012,"transactionId":1000000123}"#)
        #expect(request.orderId == "123456789012")
        #expect(request.expectedTransactionId == "1000000123")
    }

    @Test("line breaks and spaces in the base64 are removed")
    func base64Normalized() throws {
        let request = try parse(#"{"receipt_data":"aGVs\nbG8g\r\nd29y bGQ="}"#)
        #expect(request.receiptData == "aGVsbG8gd29ybGQ=")
    }

    @Test("empty optional strings count as absent")
    func emptyOptionals() throws {
        let request = try parse(#"{"receipt_data":"aGVsbG8=","order_id":"","user_id":null}"#)
        #expect(request.orderId == nil)
        #expect(request.userId == nil)
    }

    @Test("the same value under a field and its alias is fine; different values are refused")
    func conflictingAliases() throws {
        #expect(try parse(#"{"receipt_data":"aGVsbG8=","receipt":"aGVsbG8="}"#).receiptData == "aGVsbG8=")
        #expect(code(#"{"receipt_data":"aGVsbG8=","receipt":"d29ybGQ="}"#) == "conflicting_fields")
        #expect(code(#"{"receipt":"aGVsbG8=","order_id":"a","orderNo":"b"}"#) == "conflicting_fields")
    }

    @Test("problems are 400 with a code naming them", arguments: [
        ("not json", "invalid_json"),
        ("[1,2]", "invalid_json"),
        ("{}", "missing_receipt"),
        (#"{"order_id":"o"}"#, "missing_receipt"),
        (#"{"receipt_data":"   "}"#, "missing_receipt"),
        (#"{"receipt_data":"aGVsbG8=","signed_transaction":"\#(sampleJWS)"}"#, "multiple_proofs"),
        (#"{"receipt_data":"aGVsbG8=","transaction_id":"1"}"#, "multiple_proofs"),
        (#"{"signed_transaction":"\#(sampleJWS)","transaction_id":"1"}"#, "multiple_proofs"),
        (#"{"signed_app_transaction":"\#(sampleJWS)","signed_transaction":"\#(sampleJWS)"}"#, "multiple_proofs"),
        (#"{"signed_app_transaction":"\#(sampleJWS)","receipt":"aGVsbG8="}"#, "multiple_proofs"),
        (#"{"signed_app_transaction":12}"#, "invalid_field"),
        (#"{"signed_app_transaction":"abc.def"}"#, "invalid_signed_app_transaction"),
        (#"{"signed_app_transaction":"eyJhbGciOiJIUzI1NiJ9.eyJ0eCI6MX0.c2ln"}"#, "invalid_signed_app_transaction"),
        (#"{"signed_app_transaction":"eyJhbGciOiJFUzI1NiJ9.eyJ0eCI6MX0.c2l+"}"#, "invalid_signed_app_transaction"),
        (#"{"receipt_data":"not base64!"}"#, "invalid_receipt"),
        (#"{"receipt_data":"abc"}"#, "invalid_receipt"),
        (#"{"receipt_data":12}"#, "invalid_field"),
        (#"{"signed_transaction":12}"#, "invalid_field"),
        (#"{"signed_transaction":"abc.def"}"#, "invalid_signed_transaction"),
        (#"{"signed_transaction":"a.b.c.d"}"#, "invalid_signed_transaction"),
        (#"{"signed_transaction":"eyJhbGciOiJIUzI1NiJ9.eyJ0eCI6MX0.c2ln"}"#, "invalid_signed_transaction"),
        (#"{"signed_transaction":"eyJhbGciOiJub25lIn0.eyJ0eCI6MX0.c2ln"}"#, "invalid_signed_transaction"),
        (#"{"signed_transaction":"bm90IGpzb24.eyJ0eCI6MX0.c2ln"}"#, "invalid_signed_transaction"),
        (#"{"signed_transaction":"eyJhbGciOiJFUzI1NiJ9.eyJ0eCI6MX0.c2l+"}"#, "invalid_signed_transaction"),
        (#"{"receipt":"eyJhbGciOiJIUzI1NiJ9.eyJ0eCI6MX0.c2ln"}"#, "invalid_signed_transaction"),
        (#"{"transaction_id":"12ab"}"#, "invalid_transaction_id"),
        (#"{"transaction_id":-5}"#, "invalid_transaction_id"),
        // Not the decimal text of a UInt64 (StoreKit 2's Transaction.id): no Apple call could find it.
        (#"{"transaction_id":"0123"}"#, "invalid_transaction_id"),
        (#"{"transaction_id":"18446744073709551616"}"#, "invalid_transaction_id"),
        (#"{"transaction_id":"100000000000000000000"}"#, "invalid_transaction_id"),
        (#"{"transaction_id":" 2000000123456789"}"#, "invalid_transaction_id"),
        (#"{"transaction_id":"+2000000123456789"}"#, "invalid_transaction_id"),
        (#"{"transaction_id":"２０００"}"#, "invalid_transaction_id"),
        (#"{"transaction_id":true}"#, "invalid_field"),
        (#"{"transaction_id":"1","expected_app_account_token":"not-a-uuid"}"#, "invalid_field"),
        (#"{"transaction_id":"1","expected_app_account_token":42}"#, "invalid_field"),
        (#"{"receipt_data":"aGVsbG8=","order_id":1.5}"#, "invalid_field"),
        (#"{"receipt_data":"aGVsbG8=","user_id":true}"#, "invalid_field"),
        (#"{"receipt_data":"aGVsbG8=","user_id":{"a":1}}"#, "invalid_field"),
        (#"{"receipt_data":"aGVsbG8=","expected_product_id":["p"]}"#, "invalid_field"),
    ])
    func rejected(body: String, expected: String) {
        #expect(code(body) == expected)
    }

    /// Issue 24 item 9: a control character in an identifier is refused with 400 `invalid_identifier`, never
    /// stored truncated (libpq would cut `victim\u0000x` to `victim`).
    @Test("an identifier with a control character (C0, DEL, C1) is 400 invalid_identifier naming the field", arguments: [
        ("user_id", #"victim\u0000x"#), ("user_id", #"u\n"#), ("order_id", #"o\u007f"#), ("orderNo", #"o\u0080"#),
        ("expected_transaction_id", #"1000\u0000"#), ("transactionId", #"1000\u001b"#),
        ("expected_product_id", #"gems\u009f"#), ("submission_id", #"s\u00001"#), ("user_id", #"\t"#),
    ])
    func controlCharactersRefused(field: String, value: String) {
        let refused = error(#"{"receipt_data":"aGVsbG8=","\#(field)":"\#(value)"}"#)
        #expect(refused?.status == 400)
        #expect(refused?.code == "invalid_identifier", "\(refused?.description ?? "accepted")")
        #expect(refused?.message.hasPrefix(field) == true, "\(refused?.message ?? "accepted")")
        #expect(refused?.message.contains("U+") == true)
    }

    @Test("identifiers in other scripts, with spaces or emoji, are kept unchanged")
    func printableIdentifiersKept() throws {
        let request = try parse(#"{"receipt_data":"aGVs\nbG8=","user_id":"Jürgen 🎮","order_id":"注文 1"}"#)
        #expect(request.userId == "Jürgen 🎮")
        #expect(request.orderId == "注文 1")
    }

    @Test("a field of the wrong JSON type is named in the message", arguments: [
        ("order_id", "1.5"), ("user_id", "true"), ("expected_transaction_id", "[]"), ("expected_product_id", "{}"),
        ("signed_transaction", "1"), ("submission_id", "false"), ("expected_app_account_token", "7"),
    ])
    func wrongTypeNamed(field: String, value: String) {
        let proof = field == "signed_transaction" ? "" : #""transaction_id":"1","#
        let refused = error(#"{\#(proof)"\#(field)":\#(value)}"#)
        #expect(refused?.code == "invalid_field")
        #expect(refused?.message.hasPrefix(field) == true, "\(refused?.message ?? "accepted")")
    }

    @Test("a malformed JWS sent as receipt_data says what it was taken for")
    func jwsMessage() {
        let refused = error(#"{"receipt":"eyJhbGciOiJIUzI1NiJ9.eyJ0eCI6MX0.c2ln"}"#)
        #expect(refused?.message.contains("receipt_data looks like a StoreKit 2 signed transaction") == true)
        #expect(refused?.message.contains("ES256") == true)
    }

    @Test("over-long id fields are refused")
    func longField() {
        let long = String(repeating: "x", count: SubmissionRequest.maximumFieldLength + 1)
        #expect(code(#"{"receipt_data":"aGVsbG8=","user_id":"\#(long)"}"#) == "invalid_field")
    }

    @Test("the submission carries the normalized fields, the client, the id and the time")
    func submission() throws {
        let request = try parse(#"{"receipt":"aGVs\nbG8=","orderNo":7,"user_id":"u"}"#)
        let submission = request.submission(id: "id-1", clientId: "billing", submittedAtMs: 1_700_000_000_000)
        #expect(submission.submissionId == "id-1")
        #expect(submission.receiptData == "aGVsbG8=")
        #expect(submission.orderId == "7")
        #expect(submission.userId == "u")
        #expect(submission.clientId == "billing")
        #expect(submission.submittedAtMs == 1_700_000_000_000)
        #expect(submission.schemaVersion == 1)
        #expect(submission.partitionKey == "u")
    }

    static let acceptedBodies: [String] = [
        #"{"receipt_data":"aGVsbG8="}"#,
        #"{"receipt_data":"aGVs\r\nbG8g d29ybGQ=","order_id":"o","user_id":42,"expected_transaction_id":1000}"#,
        #"{"receipt":"aGVsbG8=","orderNo":"A-9","transactionId":"2000","sandbox":"1"}"#,
        seedClientBody(sandbox: "0"),
        #"{"receipt_data":"\#(sampleJWS)","expected_product_id":"com.example.p"}"#,
        #"{"signed_transaction":"\#(sampleJWS)","expected_app_account_token":"7E3FB20B-4CDB-47CC-936D-99D65F608138"}"#,
        #"{"transaction_id":2000000123456789,"expected_product_id":123,"order_id":null,"user_id":""}"#,
        #"{"transaction_id":"1","expected_transaction_id":"1","expected_product_id":"p","submission_id":"s-9"}"#,
        #"{"signed_app_transaction":" \#(sampleJWS)\n","user_id":"u-1","order_id":"o-1"}"#,
    ]

    @Test(
        "every accepted body becomes a message Submission.decodeValidated accepts unchanged",
        arguments: acceptedBodies)
    func roundTrip(body: String) throws {
        let request = try parse(body)
        for clientId in [nil, "billing"] {
            let submission = request.submission(id: "rt-1", clientId: clientId, submittedAtMs: 1_764_489_600_000)
            let decoded = try Submission.decodeValidated(from: SubmissionJSON.encode(submission))
            #expect(decoded == submission)
            #expect(decoded.fingerprint == submission.fingerprint)
        }
    }
}
