import ReceiptModel
import Testing

/// `SubmissionJSON`, a submission's one writer, writes the bytes `JSONEncoder` writes (`WrittenJSON`), exactly the
/// members the submission carries, for every proof, every optional field present or absent, and strings that need
/// escaping; `Decodable` reads the submission back.
@Suite("submission JSON (direct writer)")
struct SubmissionJSONTests {
    static let proofs: [PurchaseProof] = [
        .receipt("MIIT" + String(repeating: "aGVsbG8=/+", count: 200)),
        .signedTransaction("eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.c2ln"),
        .transactionId("2000000123456789"),
        .signedAppTransaction("eyJhbGciOiJFUzI1NiJ9.eyJhcHBUcmFuc2FjdGlvbklkIjoiMSJ9.c2ln"),
    ]

    @Test("every proof, with no optional field and with all of them: JSONEncoder's bytes")
    func sameBytesAsMessageCoding() throws {
        for proof in Self.proofs {
            for allOptionals in [false, true] {
                let submission = Submission(
                    submissionId: "s-1", proof: proof, clientId: allOptionals ? "game-server" : nil,
                    orderId: allOptionals ? "order-9" : nil, userId: allOptionals ? "user-7" : nil,
                    expectedTransactionId: allOptionals ? "2000000123456789" : nil,
                    expectedProductId: allOptionals ? "com.example.gems100" : nil,
                    expectedAppAccountToken: allOptionals ? "6f1e8e0c-0b6b-4f5e-9a31-2f8f0c1d2e3f" : nil,
                    submittedAtMs: 1_765_000_000_123)
                try Self.check(submission, "\(proof)")
            }
        }
    }

    @Test("each optional field alone, so each member is the first or follows another correctly")
    func eachOptionalAlone() throws {
        let base = Submission(submissionId: "s-2", proof: .transactionId("1"), submittedAtMs: 0)
        let setters: [(inout Submission) -> Void] = [
            { $0.clientId = "c" }, { $0.expectedAppAccountToken = "t" }, { $0.expectedProductId = "p" },
            { $0.expectedTransactionId = "2" }, { $0.orderId = "o" }, { $0.userId = "u" },
        ]
        for set in setters {
            var submission = base
            set(&submission)
            try Self.check(submission)
        }
    }

    @Test("strings that need escaping, Unicode, slashes, the Int64 limits and another schema version")
    func awkwardValues() throws {
        for text in ["quote \" backslash \\ slash /", "tab\tnew\nline\u{1}", "ünïcødé 🎮 \u{7F}", ""] {
            for millis in [Int64.min, -1, Int64.max] {
                let submission = Submission(
                    submissionId: text, proof: .receipt(text), clientId: text, orderId: text, userId: text,
                    submittedAtMs: millis, schemaVersion: 7)
                try Self.check(submission, "\(text)")
            }
        }
    }

    static func check(_ submission: Submission, _ comment: Comment? = nil) throws {
        let written = SubmissionJSON.encode(submission)
        #expect(written == (try WrittenJSON.canonical(written)), comment)
        var members: Set<String> = ["schema_version", "submission_id", "submitted_at_ms"]
        switch submission.proof {
        case .receipt: members.insert("receipt_data")
        case .signedTransaction: members.insert("signed_transaction")
        case .transactionId: members.insert("transaction_id")
        case .signedAppTransaction: members.insert("signed_app_transaction")
        }
        let optionals = [
            ("client_id", submission.clientId), ("order_id", submission.orderId), ("user_id", submission.userId),
            ("expected_transaction_id", submission.expectedTransactionId),
            ("expected_product_id", submission.expectedProductId),
            ("expected_app_account_token", submission.expectedAppAccountToken),
        ]
        for (name, value) in optionals where value != nil { members.insert(name) }
        #expect(try WrittenJSON.memberNames(written) == [members], comment)
        #expect(try MessageCoding.decode(Submission.self, from: written) == submission, comment)
    }
}
