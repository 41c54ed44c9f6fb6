import Testing

@testable import ReceiptModel

@Suite struct SubmissionDecodingTests {
    private func decode(_ json: String) throws(MalformedSubmission) -> Submission {
        try Submission.decodeValidated(from: Array(json.utf8))
    }

    @Test func decodesAContractMessage() throws {
        let submission = try decode(
            """
            {"schema_version":1,"submission_id":"s-1","receipt_data":"TUlJ\\nVGFn","order_id":"o-9","user_id":"u-3",
             "expected_transaction_id":"1000000460004095","expected_product_id":"gems_100","submitted_at_ms":1700000000000,
             "extra_field":{"ignored":true}}
            """)
        #expect(
            submission
                == Submission(
                    submissionId: "s-1", receiptData: "TUlJVGFn", orderId: "o-9", userId: "u-3",
                    expectedTransactionId: "1000000460004095", expectedProductId: "gems_100",
                    submittedAtMs: 1_700_000_000_000))
    }

    @Test func numericIdsAreReadAsTheirDigits() throws {
        let submission = try decode(
            #"{"schema_version":1,"submission_id":"s","receipt_data":"YQ==","expected_transaction_id":1000000460004095,"order_id":42}"#
        )
        #expect(submission.expectedTransactionId == "1000000460004095")
        #expect(submission.orderId == "42")
    }

    @Test func notJSONHasNoRecoverableId() {
        #expect(throws: MalformedSubmission(submissionId: nil, orderId: nil, userId: nil, problem: "not valid JSON")) {
            try decode("{not json")
        }
        #expect(throws: MalformedSubmission(submissionId: nil, orderId: nil, userId: nil, problem: "not a JSON object")) {
            try decode("[1,2]")
        }
    }

    @Test func badReceiptKeepsTheIdsForTheFailedResult() {
        do {
            _ = try decode(#"{"schema_version":1,"submission_id":"s-7","order_id":"o","user_id":"u","receipt_data":"%%%"}"#)
            Issue.record("expected a malformed submission")
        } catch {
            #expect(error.submissionId == "s-7")
            #expect(error.orderId == "o")
            #expect(error.userId == "u")
            #expect(error.problem.contains("not base64"))
        }
    }

    @Test func unsupportedSchemaVersionIsMalformed() {
        #expect(throws: MalformedSubmission.self) {
            try decode(#"{"schema_version":2,"submission_id":"s","receipt_data":"YQ=="}"#)
        }
        #expect(throws: MalformedSubmission.self) {
            try decode(#"{"schema_version":true,"submission_id":"s","receipt_data":"YQ=="}"#)
        }
    }

    @Test func missingOrOverlongIdIsMalformedWithoutId() {
        do {
            _ = try decode(#"{"schema_version":1,"receipt_data":"YQ=="}"#)
            Issue.record("expected a malformed submission")
        } catch {
            #expect(error.submissionId == nil)
        }
        let longId = String(repeating: "x", count: Submission.maximumIdLength + 1)
        do {
            _ = try decode(#"{"schema_version":1,"submission_id":"\#(longId)","receipt_data":"YQ=="}"#)
            Issue.record("expected a malformed submission")
        } catch {
            #expect(error.submissionId == nil)
        }
    }

    @Test func partitionKeyPrefersUserThenOrderThenSubmission() {
        var submission = Submission(submissionId: "s", receiptData: "YQ==", orderId: "o", userId: "u", submittedAtMs: 0)
        #expect(submission.partitionKey == "u")
        submission.userId = nil
        #expect(submission.partitionKey == "o")
        submission.orderId = ""
        #expect(submission.partitionKey == "s")
    }
}

/// Issue 10 item 5 and issue 11: every contract field is read with its type; exactly one proof.
@Suite struct StrictSubmissionDecodingTests {
    private func decode(_ json: String) throws(MalformedSubmission) -> Submission {
        try Submission.decodeValidated(from: Array(json.utf8))
    }

    private func problem(_ json: String) -> MalformedSubmission? {
        do {
            _ = try decode(json)
            return nil
        } catch {
            return error
        }
    }

    static let jws =
        "eyJhbGciOiJFUzI1NiIsIng1YyI6WyJBQUFBIl19.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.c2lnbmF0dXJl"

    @Test(arguments: [
        ("expected_transaction_id", "true"), ("expected_transaction_id", "{}"), ("expected_transaction_id", "1.5"),
        ("expected_product_id", "42"), ("expected_product_id", "[\"gems\"]"), ("order_id", "false"),
        ("user_id", "{\"id\":1}"), ("client_id", "7"), ("expected_app_account_token", "12"),
        ("submitted_at_ms", "\"yesterday\""), ("submitted_at_ms", "1.5"), ("schema_version", "\"1\""),
    ])
    func aFieldOfTheWrongTypeIsMalformedNeverIgnored(field: String, value: String) {
        let error = problem(#"{"schema_version":1,"submission_id":"s-1","receipt_data":"YQ==","\#(field)":\#(value)}"#)
        #expect(error != nil, "\(field): \(value)")
        #expect(error?.problem.contains(field) == true, "\(error?.problem ?? "")")
        if field != "schema_version" { #expect(error?.submissionId == "s-1") }
    }

    /// Issue 24 item 9: libpq ends text at a NUL, so `victim\u0000x` would be credited as `victim`. A direct
    /// producer's identifier with a control character is malformed (never truncated), and the failed result does not
    /// echo it.
    @Test(arguments: [
        ("user_id", #"victim\u0000x"#), ("user_id", #"a\u001fb"#), ("order_id", #"o\u007f"#),
        ("order_id", #"o\u0085"#), ("client_id", #"app\u0000"#), ("expected_product_id", #"gems\u0000"#),
        ("expected_transaction_id", #"1000\u0000"#), ("user_id", #"\n"#), ("user_id", #"u\t1"#),
        ("user_id", #"\u009f"#),
    ])
    func anIdentifierWithAControlCharacterIsMalformed(field: String, value: String) {
        let error = problem(
            #"{"schema_version":1,"submission_id":"s-1","receipt_data":"YQ==","\#(field)":"\#(value)"}"#)
        #expect(error != nil, "\(field): \(value) was accepted")
        #expect(error?.problem.contains(field) == true, "\(error?.problem ?? "")")
        #expect(error?.problem.contains("control character") == true, "\(error?.problem ?? "")")
        #expect(error?.submissionId == "s-1")
        // The failed result names no identifier holding the character.
        for echoed in [error?.userId, error?.orderId, error?.clientId] {
            let text: String? = echoed ?? nil
            #expect(text.flatMap(IdentifierText.firstControlCharacter(in:)) == nil)
        }
    }

    @Test func aSubmissionIdWithAControlCharacterIsMalformedWithoutId() {
        let error = problem(#"{"schema_version":1,"submission_id":"s\u00001","receipt_data":"YQ==","user_id":"u"}"#)
        #expect(error?.problem.contains("submission_id") == true)
        #expect(error?.submissionId == nil)
        #expect(error?.userId == "u")
    }

    @Test func identifiersWithoutControlCharactersAreKept() throws {
        // Spaces, other scripts and emoji are not control characters; line breaks in base64 stay tolerated.
        let submission = try decode(
            #"{"schema_version":1,"submission_id":"s-1","receipt_data":"Y\nQ==","user_id":"Jürgen 🎮 ユーザー","#
                + #""order_id":"o 1\u00a0x"}"#)
        #expect(submission.userId == "Jürgen 🎮 ユーザー")
        #expect(submission.orderId == "o 1\u{00A0}x")
        #expect(IdentifierText.firstControlCharacter(in: "a\u{0}b") == "\u{0}")
        #expect(IdentifierText.firstControlCharacter(in: "a\u{A0}b") == nil)
    }

    /// Exactly the characters Unicode calls Cc (C0, DEL, C1) are found, wherever they stand and whatever surrounds
    /// them, and the first is named: every scalar from U+0000 to U+02FF, with the neighbours of the C1 range in
    /// UTF-8 (U+00A0 shares C1's lead byte 0xC2, U+0100 and up do not).
    @Test func theFirstControlCharacterIsFoundByCategoryCcAlone() {
        let around = ["", "a", "é", "🎮", "\u{A0}", "ユ"]
        for value in UInt32(0)...0x2FF {
            let scalar = Unicode.Scalar(value)!
            let expected: Unicode.Scalar? = scalar.properties.generalCategory == .control ? scalar : nil
            for before in around {
                for after in around {
                    let text = before + String(Character(scalar)) + after
                    #expect(IdentifierText.firstControlCharacter(in: text) == expected, "U+\(String(value, radix: 16))")
                }
            }
        }
        #expect(IdentifierText.firstControlCharacter(in: "ok\u{85}then\u{0}") == "\u{85}", "the first of two")
        #expect(IdentifierText.firstControlCharacter(in: "Jürgen 🎮 ユーザー") == nil)
        #expect(IdentifierText.firstControlCharacter(in: "") == nil)
    }

    @Test func nullCountsAsAbsent() throws {
        let submission = try decode(
            #"{"schema_version":1,"submission_id":"s","receipt_data":"YQ==","expected_transaction_id":null,"order_id":null}"#)
        #expect(submission.expectedTransactionId == nil)
        #expect(submission.orderId == nil)
    }

    @Test func exactlyOneProofIsRequired() {
        #expect(problem(#"{"schema_version":1,"submission_id":"s"}"#)?.problem.contains("none of") == true)
        #expect(
            problem(#"{"schema_version":1,"submission_id":"s","receipt_data":"YQ==","transaction_id":"2000000123"}"#)?
                .problem.contains("more than one") == true)
    }

    @Test func eachProofKindDecodes() throws {
        #expect(
            try decode(#"{"schema_version":1,"submission_id":"s","transaction_id":"2000000123456789"}"#).proof
                == .transactionId("2000000123456789"))
        #expect(
            try decode(#"{"schema_version":1,"submission_id":"s","transaction_id":2000000123456789}"#).proof
                == .transactionId("2000000123456789"))
        #expect(
            try decode(#"{"schema_version":1,"submission_id":"s","signed_transaction":"\#(Self.jws)"}"#).proof
                == .signedTransaction(Self.jws))
    }

    @Test func aTransactionIdMustBeDigits() {
        #expect(problem(#"{"schema_version":1,"submission_id":"s","transaction_id":"abc"}"#) != nil)
    }

    /// A direct producer's id that is no UInt64's decimal text (StoreKit 2's `Transaction.id`) is malformed, with
    /// the submission's id kept for the `failed` result.
    @Test(arguments: ["0123", "18446744073709551616", "123456789012345678901", "12 34", "-1", "1e5", "٣"])
    func aTransactionIdMustBeAnUnsignedSixtyFourBitInteger(id: String) throws {
        let malformed = try #require(
            problem(#"{"schema_version":1,"submission_id":"s-7","transaction_id":"\#(id)"}"#))
        #expect(malformed.submissionId == "s-7")
        #expect(malformed.problem.contains("transaction_id"))
        #expect(TransactionIdText.isValid(id) == false)
    }

    @Test func theLargestUnsignedSixtyFourBitIdAndZeroAreAccepted() throws {
        for id in ["18446744073709551615", "0", "2000000123456789"] {
            #expect(TransactionIdText.isValid(id))
            #expect(try decode(#"{"schema_version":1,"submission_id":"s","transaction_id":"\#(id)"}"#).proof == .transactionId(id))
        }
    }

    @Test func aSignedTransactionMustBeAnES256CompactJWS() {
        let none = "eyJhbGciOiJub25lIn0.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.c2ln"  // {"alg":"none"}
        #expect(
            problem(#"{"schema_version":1,"submission_id":"s","signed_transaction":"\#(none)"}"#)?.problem
                .contains("ES256") == true)
        #expect(problem(#"{"schema_version":1,"submission_id":"s","signed_transaction":"a.b"}"#) != nil)
        #expect(problem(#"{"schema_version":1,"submission_id":"s","signed_transaction":"YQ==.YQ==.YQ=="}"#) != nil)
    }

    @Test func theAppAccountTokenIsAUUIDKeptLowerCased() throws {
        let submission = try decode(
            #"{"schema_version":1,"submission_id":"s","receipt_data":"YQ==","expected_app_account_token":"7E3FB20B-4CDB-47CC-936D-99D65F608138"}"#
        )
        #expect(submission.expectedAppAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(
            problem(#"{"schema_version":1,"submission_id":"s","receipt_data":"YQ==","expected_app_account_token":"nope"}"#)
                != nil)
    }

    /// The one form every token is compared in (the ledger's results, events, declarations, parked claims and links):
    /// ASCII letters lower-cased, nothing else touched, the same as `normalize` for a UUID.
    @Test(arguments: [
        ("7E3FB20B-4CDB-47CC-936D-99D65F608138", "7e3fb20b-4cdb-47cc-936d-99d65f608138"),
        ("7e3fb20b-4cdb-47cc-936d-99d65f608138", "7e3fb20b-4cdb-47cc-936d-99d65f608138"),
        ("7e3FB20b-4Cdb-47cc-936D-99d65f608138", "7e3fb20b-4cdb-47cc-936d-99d65f608138"),
        ("Not-A-UUID", "not-a-uuid"),
        ("ÄBC-É", "Äbc-É"),
        ("", ""),
    ])
    func aTokensCanonicalFormLowerCasesASCIILettersOnly(_ text: String, _ canonical: String) {
        #expect(AppAccountToken.canonical(text) == canonical)
        #expect(AppAccountToken.canonical(canonical) == canonical, "idempotent")
        if let uuid = AppAccountToken.normalize(text) { #expect(uuid == canonical) }
    }

    @Test func theClientIdIsEchoedEvenWhenTheMessageIsMalformed() {
        #expect(
            problem(#"{"schema_version":1,"submission_id":"s","client_id":"billing","receipt_data":"%%"}"#)?.clientId
                == "billing")
    }

    @Test func encodingWritesOnlyTheProofInUseAndRoundTrips() throws {
        let submission = Submission(
            submissionId: "s", proof: .transactionId("2000000123456789"), clientId: "billing",
            expectedAppAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138", submittedAtMs: 5)
        let bytes = SubmissionJSON.encode(submission)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(!text.contains("receipt_data"))
        #expect(!text.contains("signed_transaction"))
        #expect(try Submission.decodeValidated(from: bytes) == submission)
        #expect(try MessageCoding.decode(Submission.self, from: bytes) == submission)
    }

    /// `validated()` (a retry record's submission, already decoded) gives what decoding its encoding gave before it
    /// existed: the same normalized value or the same problem, with the same echoed ids. Each row is a submission as
    /// the structural decoder reads it (ids as strings); the expected outcome is stated, and both paths must give it.
    @Test(arguments: [
        // A valid receipt with a line break: normalized.
        (#"{"schema_version":1,"submission_id":"s","receipt_data":"TUlJ\nVGFn","user_id":"u","submitted_at_ms":7}"#,
         "ok"),
        // A lower-cased token, an empty order id (absent), a StoreKit 2 transaction id.
        (#"{"schema_version":1,"submission_id":"s","transaction_id":"2000000123456789","order_id":"","#
            + #""expected_app_account_token":"7E3FB20B-4CDB-47CC-936D-99D65F608138"}"#, "ok"),
        (#"{"schema_version":2,"submission_id":"s","receipt_data":"YQ==","order_id":"o"}"#, "schema_version 2"),
        (#"{"schema_version":10000000000000000,"submission_id":"s","receipt_data":"YQ=="}"#,
         "schema_version must be an integer"),
        (#"{"schema_version":1,"submission_id":"s","receipt_data":"YQ==","submitted_at_ms":10000000000000000}"#,
         "submitted_at_ms must be an integer"),
        (#"{"schema_version":1,"submission_id":"","receipt_data":"YQ=="}"#, "submission_id is missing or empty"),
        (#"{"schema_version":1,"submission_id":"\#(String(repeating: "x", count: 257))","receipt_data":"YQ=="}"#,
         "longer than 256 characters"),
        (#"{"schema_version":1,"submission_id":"s","receipt_data":"YQ==","user_id":"\#(String(repeating: "u", count: 513))"}"#,
         "user_id is longer than 512 bytes"),
        (#"{"schema_version":1,"submission_id":"s","receipt_data":"YQ==","order_id":"a\u0000b","user_id":"u"}"#,
         "U+0000"),
        (#"{"schema_version":1,"submission_id":"s","receipt_data":""}"#, "none of"),
        (#"{"schema_version":1,"submission_id":"s","receipt_data":"%%","client_id":"billing"}"#, "not base64"),
        (#"{"schema_version":1,"submission_id":"s","transaction_id":"0042"}"#, "transaction_id must be"),
        (#"{"schema_version":1,"submission_id":"s","signed_transaction":"a.b"}"#, "signed_transaction"),
        (#"{"schema_version":1,"submission_id":"s","receipt_data":"YQ==","expected_app_account_token":"nope"}"#,
         "not a UUID"),
    ])
    func validatingADecodedSubmissionMatchesDecodingItsEncoding(json: String, expected: String) throws {
        let decoded = try MessageCoding.decode(Submission.self, from: Array(json.utf8))
        func outcome(_ body: () throws(MalformedSubmission) -> Submission) -> Result<Submission, MalformedSubmission> {
            do { return .success(try body()) } catch { return .failure(error) }
        }
        let direct = outcome { () throws(MalformedSubmission) in try decoded.validated() }
        let roundTrip = outcome { () throws(MalformedSubmission) in
            try Submission.decodeValidated(from: SubmissionJSON.encode(decoded))
        }
        #expect(direct == roundTrip)
        switch direct {
        case .success(let submission):
            #expect(expected == "ok")
            #expect(submission == (try Submission.decodeValidated(from: Array(json.utf8))))
        case .failure(let error):
            #expect(error.problem.contains(expected), "\(error.problem)")
        }
    }
}
