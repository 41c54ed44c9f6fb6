import Foundation
import Testing

@testable import ReceiptModel

/// `signed_app_transaction`, the fourth proof field (issue 29 item 2): read and validated from Kafka like a signed
/// transaction, written back unchanged, and part of the fingerprint; the result's `app_transaction`.
@Suite struct AppTransactionSubmissionTests {
    static let jws = "eyJhbGciOiJFUzI1NiJ9.eyJhcHBUcmFuc2FjdGlvbklkIjoiNyJ9.c2lnbmF0dXJl"

    private func decode(_ json: String) throws(MalformedSubmission) -> Submission {
        try Submission.decodeValidated(from: Array(json.utf8))
    }

    @Test func anAppTransactionIsAProofOfItsOwnAndRoundTrips() throws {
        let submission = try decode(
            #"{"schema_version":1,"submission_id":"a-1","signed_app_transaction":" \#(Self.jws)\n","user_id":"u"}"#)
        #expect(submission.proof == .signedAppTransaction(Self.jws))
        #expect(submission.proof.fieldName == "signed_app_transaction")
        let written = String(decoding: SubmissionJSON.encode(submission), as: UTF8.self)
        #expect(written.contains(#""signed_app_transaction":"\#(Self.jws)""#))
        #expect(!written.contains("signed_transaction\""))
        #expect(try decode(written) == submission)
        // The same JWS as another proof is another submission.
        var asTransaction = submission
        asTransaction.proof = .signedTransaction(Self.jws)
        #expect(asTransaction.fingerprint != submission.fingerprint)
    }

    @Test func anAppTransactionBesideAnotherProofOrMalformedIsAMalformedSubmission() {
        let cases: [(String, String)] = [
            (#""signed_app_transaction":"\#(Self.jws)","signed_transaction":"\#(Self.jws)""#, "more than one of"),
            (#""signed_app_transaction":"\#(Self.jws)","transaction_id":"1""#, "more than one of"),
            (#""signed_app_transaction":"abc""#, "signed_app_transaction is not a compact JWS"),
            (#""signed_app_transaction":"eyJhbGciOiJIUzI1NiJ9.e30.c2ln""#, "signed_app_transaction's header names alg"),
            (#""signed_app_transaction":7"#, "signed_app_transaction must be a string"),
        ]
        for (fields, problem) in cases {
            do {
                _ = try decode(#"{"schema_version":1,"submission_id":"a-2","# + fields + "}")
                Issue.record("accepted: \(fields)")
            } catch {
                #expect(error.submissionId == "a-2")
                #expect(error.problem.contains(problem), "\(fields): \(error.problem)")
            }
        }
        do {
            _ = try decode(#"{"schema_version":1,"submission_id":"a-3"}"#)
            Issue.record("accepted no proof")
        } catch {
            #expect(error.problem.contains("signed_app_transaction"))
        }
    }

    @Test func aResultCarriesItsAppTransactionAndNullOtherwise() throws {
        let app = VerifiedAppTransaction(
            appTransactionId: "705000000000001", bundleId: "com.example", appAppleId: 1, applicationVersion: "2",
            originalApplicationVersion: "1.0", originalPurchaseDateMs: 1_600_000_000_000, environment: .production)
        let verified = VerificationResult(
            submissionId: "a-1", orderId: nil, userId: "u", outcome: .verified, reason: nil, message: nil,
            appleStatus: nil, environment: .production, bundleId: "com.example", transactions: [],
            appTransaction: app, attempts: 1, verifiedAtMs: 1)
        let json = String(decoding: VerificationResultJSON.encode(verified), as: UTF8.self)
        #expect(json.contains(#""original_application_version":"1.0""#))
        #expect(json.contains(#""preorder_date_ms":null"#) && json.contains(#""original_platform":null"#))
        #expect(try MessageCoding.decode(VerificationResult.self, from: Array(json.utf8)) == verified)
        var plain = verified
        plain.appTransaction = nil
        #expect(
            String(decoding: VerificationResultJSON.encode(plain), as: UTF8.self).contains(#""app_transaction":null"#))
        // A result written before 2026-12 (no such member) still reads.
        let old = json.replacingOccurrences(of: #""app_transaction":"#, with: #""ignored":"#)
        #expect(try MessageCoding.decode(VerificationResult.self, from: Array(old.utf8)).appTransaction == nil)
    }
}
