import Testing

@testable import ReceiptModel

@Suite struct SubmissionFingerprintTests {
    let base = Submission(
        submissionId: "s-1", receiptData: "YQ==", orderId: "o-1", userId: "u-1", expectedTransactionId: "1000",
        expectedProductId: "gems", submittedAtMs: 1)

    @Test func theInputNamesEveryJudgedFieldWithItsLength() {
        #expect(
            String(decoding: SubmissionFingerprintInput.bytes(of: base), as: UTF8.self)
                == "v1\nreceipt_data=4:YQ==\nexpected_transaction_id=4:1000\nexpected_product_id=4:gems\n"
                + "expected_app_account_token=-\n")
    }

    @Test func theFingerprintIsTheHexSHA256OfTheInput() {
        // printf 'v1\nreceipt_data=4:YQ==\nexpected_transaction_id=4:1000\nexpected_product_id=4:gems\n
        // expected_app_account_token=-\n' | sha256sum
        #expect(base.fingerprint == "0429cd160ee2f04ac87181a3865687ef6bd2afc9db29e169c3ff46f176f9f565")
    }

    @Test func echoedFieldsDoNotChangeItButTheProofAndEveryExpectationDo() {
        var echoed = base
        echoed.orderId = "other"
        echoed.userId = nil
        echoed.clientId = "billing"
        echoed.submittedAtMs = 99
        #expect(echoed.fingerprint == base.fingerprint)

        var changes: [Submission] = []
        var proof = base
        proof.proof = .receipt("Yg==")
        changes.append(proof)
        var kind = base
        kind.proof = .transactionId("YQ==")
        changes.append(kind)
        var transaction = base
        transaction.expectedTransactionId = "1001"
        changes.append(transaction)
        var product = base
        product.expectedProductId = nil
        changes.append(product)
        var token = base
        token.expectedAppAccountToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        changes.append(token)
        let fingerprints = Set(changes.map(\.fingerprint) + [base.fingerprint])
        #expect(fingerprints.count == changes.count + 1)
    }
}
