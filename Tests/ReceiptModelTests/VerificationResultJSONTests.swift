import ReceiptModel
import ServiceSupport
import Testing

/// Results are written by `VerificationResultJSON` only, not `JSONEncoder`: the bytes must stay exactly the ones
/// `JSONEncoder` writes (`MessageCoding`; at-least-once duplicates byte-identical, consumers unchanged), for every
/// member, null or not, and for strings that need escaping (`WrittenJSON`); and its strict reader reads back what was
/// written.
@Suite struct VerificationResultJSONTests {
    static let awkward = "quote \" backslash \\ slash / tab \t newline \n nul \u{0} bell \u{7} é 日本 🎮 \u{2028}"

    static func transaction(_ id: String, full: Bool) -> VerifiedTransaction {
        full
            ? VerifiedTransaction(
                TransactionFields(
                    transactionId: id, originalTransactionId: "orig-" + id, productId: "gems_100/" + awkward,
                    quantity: 3, purchaseDateMs: 1_539_946_248_000, expiresDateMs: 1_602_592_000_000,
                    cancellationDateMs: 1_600_000_000_001, cancellationReason: "1", webOrderLineItemId: "1602592",
                    inAppOwnershipType: "PURCHASED", isTrialPeriod: true,
                    appAccountToken: "5A1B0C2D-0000-4000-8000-000000000001", productType: .autoRenewable,
                    revocationType: "REFUND_FULL", revocationPercentage: 100000, isUpgraded: true, price: 990,
                    currency: "EUR", transactionReason: "PURCHASE", offerDiscountType: "PAY_AS_YOU_GO",
                    offerPeriod: "P3M", billingPlanType: "MONTHLY",
                    commitmentInfo: .object(["commitmentPeriod": .string("P1Y"), "billingCount": .integer(12)]),
                    appTransactionId: "705000000000001"),
                creditable: false, credit: .object(["item": .string("gems"), "amount": .integer(10), "x": .null]),
                notCreditableReason: .refunded, environment: .sandbox)
            : VerifiedTransaction(
                TransactionFields(
                    transactionId: id, originalTransactionId: nil, productId: "gems_100", quantity: 1,
                    purchaseDateMs: 1_539_946_248_000),
                environment: .production)
    }

    static let results: [VerificationResult] = [
        VerificationResult(
            submissionId: "s-1", orderId: "order-s-1", userId: "user-1", outcome: .verified, reason: nil,
            source: .verifyReceipt, message: nil, appleStatus: 0, environment: .production,
            bundleId: "com.example.game", transactions: [transaction("2000000123", full: false)],
            submissionFingerprint: "ab01", attempts: 1, verifiedAtMs: 1_700_000_000_000),
        VerificationResult(
            submissionId: "s-2 " + awkward, orderId: awkward, userId: awkward, clientId: awkward, outcome: .rejected,
            reason: .refunded, source: .serverAPI, message: awkward, appleStatus: -21_002, environment: .sandbox,
            bundleId: awkward,
            transactions: [transaction("1", full: true), transaction("2", full: false), transaction("3", full: true)],
            submissionFingerprint: awkward, attempts: 7, verifiedAtMs: -1, schemaVersion: 2),
        VerificationResult(
            submissionId: "s-3", orderId: nil, userId: nil, outcome: .failed, reason: .malformedSubmission,
            message: "not valid JSON", appleStatus: nil, environment: nil, bundleId: nil, transactions: [],
            attempts: 0, verifiedAtMs: 0),
        VerificationResult(
            submissionId: "s-5", orderId: nil, userId: nil, outcome: .failed, reason: .appleUnavailable,
            message: nil, appleStatus: Int.min, environment: nil, bundleId: nil,
            transactions: [
                VerifiedTransaction(
                    TransactionFields(
                        transactionId: "9", originalTransactionId: nil, productId: "p", quantity: 10,
                        purchaseDateMs: .max, expiresDateMs: .min, price: -9),
                    environment: .production)
            ],
            attempts: Int.max, verifiedAtMs: Int64.min),
        VerificationResult(
            submissionId: "s-4", orderId: "o", userId: "u", outcome: .verified, reason: nil, source: .serverAPI,
            message: nil, appleStatus: nil, environment: .production, bundleId: "com.example.game", transactions: [],
            appTransaction: VerifiedAppTransaction(
                appTransactionId: "705000000000001", bundleId: "com.example.game", environment: .production),
            attempts: 1, verifiedAtMs: 5),
        VerificationResult(
            submissionId: "s-6", orderId: nil, userId: nil, outcome: .verified, reason: nil, source: .serverAPI,
            message: nil, appleStatus: nil, environment: .sandbox, bundleId: "com.example.game", transactions: [],
            appTransaction: VerifiedAppTransaction(
                appTransactionId: awkward, bundleId: "com.example.game", appAppleId: 1_234_567_890,
                applicationVersion: "2.0/1", originalApplicationVersion: "1.0", originalPurchaseDateMs: .min,
                receiptCreationDateMs: .max, preorderDateMs: 1_764_489_600_000, receiptType: "Sandbox",
                originalPlatform: "iOS", versionExternalIdentifier: 0, environment: .sandbox,
                signedDateMs: 1_764_489_600_001),
            attempts: 1, verifiedAtMs: 6),
    ]

    @Test(arguments: results)
    func theBytesAreJSONEncodersForEveryMember(_ result: VerificationResult) throws {
        let written = VerificationResultJSON.encode(result)
        let canonical = try WrittenJSON.canonical(written)
        #expect(
            written == canonical,
            "\(String(decoding: written, as: UTF8.self))\n!=\n\(String(decoding: canonical, as: UTF8.self))")
        #expect(try WrittenJSON.memberNames(written) == [WrittenJSON.result])
        #expect(
            try WrittenJSON.memberNames(written, at: "transactions")
                == Array(repeating: WrittenJSON.transaction, count: result.transactions.count))
        #expect(
            try WrittenJSON.memberNames(written, at: "app_transaction")
                == (result.appTransaction == nil ? [] : [WrittenJSON.appTransaction]))
        #expect(try MessageCoding.decode(VerificationResult.self, from: written) == result)
    }

    /// The round trip: what the strict reader reads of the written bytes is the result's every member it reads (a
    /// result of another schema version is refused by name).
    @Test(arguments: results)
    func theStrictReaderReadsBackWhatWasWritten(_ result: VerificationResult) throws {
        let written = VerificationResultJSON.encode(result)
        guard result.schemaVersion == 1 else {
            do {
                _ = try VerificationResultJSON.read(written)
                Issue.record("a result of schema_version \(result.schemaVersion) was read")
            } catch {
                #expect(error.description == "unknown schema_version \(result.schemaVersion)")
            }
            return
        }
        #expect(try VerificationResultJSON.read(written) == VerificationResultJSON.Members(result))
    }
}
