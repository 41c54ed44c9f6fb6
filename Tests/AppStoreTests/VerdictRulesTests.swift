import ReceiptModel
import Testing

@testable import AppStore

@Suite struct VerdictRulesTests {
    static let policy = VerdictPolicy(
        allowedBundleIds: ["com.example.game", "com.example.other"], sandboxPolicy: .accept)

    static func transaction(_ id: String, product: String = "gems_100", cancelledAt: Int64? = nil) -> AppleTransaction {
        AppleTransaction(
            transactionId: id, originalTransactionId: id, productId: product, quantity: 1, purchaseDateMs: 1_000,
            cancellationDateMs: cancelledAt, cancellationReason: cancelledAt == nil ? nil : "1")
    }

    static func receipt(
        _ inApp: [AppleTransaction], latest: [AppleTransaction] = [], environment: AppStoreEnvironment = .production,
        bundleId: String? = "com.example.game"
    ) -> AppleReceipt {
        AppleReceipt(environment: environment, bundleId: bundleId, inApp: inApp, latestReceiptInfo: latest)
    }

    static func evaluate(
        _ receipt: AppleReceipt, transactionId: String? = nil, productId: String? = nil, policy: VerdictPolicy = policy
    ) -> Verdict {
        VerdictRules.evaluate(
            receipt, expectations: VerificationExpectations(transactionId: transactionId, productId: productId),
            policy: policy)
    }

    @Test func verifiesTheExpectedTransactionAndCarriesOnlyIt() {
        let verdict = Self.evaluate(
            Self.receipt([Self.transaction("1"), Self.transaction("2")]), transactionId: "2",
            productId: "gems_100")
        #expect(verdict.outcome == .verified)
        #expect(verdict.reason == nil)
        #expect(verdict.transactions.map(\.transactionId) == ["2"])
        #expect(verdict.transactions.first?.creditKey == "apple:production:2")
    }

    @Test func withoutAnExpectedTransactionCarriesEveryInAppTransaction() {
        let verdict = Self.evaluate(
            Self.receipt(
                [Self.transaction("1"), Self.transaction("2", product: "sub")],
                latest: [Self.transaction("9")]))
        #expect(verdict.outcome == .verified)
        #expect(verdict.transactions.map(\.transactionId) == ["1", "2"])
    }

    @Test func findsTheExpectedTransactionInLatestReceiptInfo() {
        let verdict = Self.evaluate(
            Self.receipt([Self.transaction("1")], latest: [Self.transaction("9")]),
            transactionId: "9")
        #expect(verdict.outcome == .verified)
        #expect(verdict.transactions.map(\.transactionId) == ["9"])
    }

    @Test func sandboxReceiptsGetSandboxCreditKeysOrAreRejectedByPolicy() {
        let receipt = Self.receipt([Self.transaction("5")], environment: .sandbox)
        #expect(Self.evaluate(receipt).transactions.first?.creditKey == "apple:sandbox:5")
        let strict = VerdictPolicy(allowedBundleIds: ["com.example.game"], sandboxPolicy: .reject)
        let verdict = Self.evaluate(receipt, policy: strict)
        #expect(verdict.outcome == .rejected)
        #expect(verdict.reason == .sandboxNotAllowed)
        #expect(Self.evaluate(Self.receipt([Self.transaction("5")]), policy: strict).outcome == .verified)
    }

    @Test func rejectsOtherAppsReceipts() {
        #expect(
            Self.evaluate(Self.receipt([Self.transaction("1")], bundleId: "com.evil.app")).reason == .bundleMismatch)
        #expect(Self.evaluate(Self.receipt([Self.transaction("1")], bundleId: nil)).reason == .bundleMismatch)
        #expect(
            Self.evaluate(Self.receipt([Self.transaction("1")], bundleId: "COM.EXAMPLE.GAME")).reason == .bundleMismatch
        )
        #expect(
            Self.evaluate(Self.receipt([Self.transaction("1")], bundleId: "com.example.other")).outcome == .verified)
    }

    @Test func rejectsAnAbsentExpectedTransaction() {
        let verdict = Self.evaluate(
            Self.receipt([Self.transaction("1")], latest: [Self.transaction("2")]),
            transactionId: "3")
        #expect(verdict.outcome == .rejected)
        #expect(verdict.reason == .transactionNotFound)
        #expect(verdict.transactions.isEmpty)
    }

    @Test func rejectsAProductMismatch() {
        let named = Self.evaluate(
            Self.receipt([Self.transaction("1", product: "gems_10")]), transactionId: "1",
            productId: "gems_100")
        #expect(named.reason == .productMismatch)
        #expect(named.transactions.map(\.productId) == ["gems_10"])
        let unnamed = Self.evaluate(Self.receipt([Self.transaction("1", product: "gems_10")]), productId: "gems_100")
        #expect(unnamed.reason == .productMismatch)
    }

    @Test func anExpectedProductWithoutATransactionNarrowsTheTransactions() {
        let verdict = Self.evaluate(
            Self.receipt([Self.transaction("1", product: "a"), Self.transaction("2", product: "b")]), productId: "b")
        #expect(verdict.outcome == .verified)
        #expect(verdict.transactions.map(\.transactionId) == ["2"])
    }

    @Test func rejectsARefundedTransaction() {
        let receipt = Self.receipt([Self.transaction("1", cancelledAt: 5_000), Self.transaction("2")])
        let verdict = Self.evaluate(receipt, transactionId: "1")
        #expect(verdict.outcome == .rejected)
        #expect(verdict.reason == .refunded)
        #expect(verdict.transactions.first?.cancellationDateMs == 5_000)
        #expect(verdict.transactions.first?.cancellationReason == "1")
        // Without an expected transaction, one live purchase is enough; the refunded one is reported as such.
        let mixed = Self.evaluate(receipt)
        #expect(mixed.outcome == .verified)
        #expect(mixed.transactions.map(\.cancellationDateMs) == [5_000, nil])
        let allRefunded = Self.evaluate(Self.receipt([Self.transaction("1", cancelledAt: 5_000)]))
        #expect(allRefunded.reason == .refunded)
    }

    @Test func rejectsAReceiptWithoutPurchases() {
        let verdict = Self.evaluate(Self.receipt([]))
        #expect(verdict.outcome == .rejected)
        #expect(verdict.reason == .noPurchases)
        #expect(Self.evaluate(Self.receipt([]), transactionId: "1").reason == .noPurchases)
    }

    @Test func usesLatestReceiptInfoWhenInAppIsEmpty() {
        let verdict = Self.evaluate(Self.receipt([], latest: [Self.transaction("7", product: "sub")]))
        #expect(verdict.outcome == .verified)
        #expect(verdict.transactions.map(\.transactionId) == ["7"])
    }

    @Test func theBundleRuleComesFirst() {
        let strict = VerdictPolicy(allowedBundleIds: ["com.example.game"], sandboxPolicy: .reject)
        let verdict = Self.evaluate(
            Self.receipt([], environment: .sandbox, bundleId: "x"), transactionId: "1",
            policy: strict)
        #expect(verdict.reason == .bundleMismatch)
    }

    @Test func normalizesEveryContractField() {
        let apple = AppleTransaction(
            transactionId: "10", originalTransactionId: "9", productId: "sub", quantity: 3, purchaseDateMs: 11,
            expiresDateMs: 12, cancellationDateMs: nil, cancellationReason: nil, webOrderLineItemId: "13",
            inAppOwnershipType: "FAMILY_SHARED", isTrialPeriod: true)
        #expect(
            VerdictRules.normalize(apple, .sandbox)
                == VerifiedTransaction(
                    transactionId: "10", originalTransactionId: "9", productId: "sub", quantity: 3, purchaseDateMs: 11,
                    expiresDateMs: 12, webOrderLineItemId: "13", inAppOwnershipType: "FAMILY_SHARED",
                    isTrialPeriod: true,
                    environment: .sandbox))
    }
}
