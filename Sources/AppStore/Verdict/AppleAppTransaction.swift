import ReceiptModel

/// Apple's verified app transaction (`AppTransaction`), normalized: the input of `AppTransactionRules`, whatever
/// answered (the device's signed copy, or Get App Transaction Info's `signedAppTransactionInfo`).
public struct AppleAppTransaction: Sendable, Equatable {
    /// What the signed payload says (`Production` or `Sandbox`; StoreKit testing data never gets here).
    public var environment: AppStoreEnvironment
    public var bundleId: String?
    public var appTransactionId: String?
    public var appAppleId: Int64?
    public var applicationVersion: String?
    public var originalApplicationVersion: String?
    public var originalPurchaseDateMs: Int64?
    public var receiptCreationDateMs: Int64?
    public var preorderDateMs: Int64?
    public var receiptType: String?
    public var originalPlatform: String?
    public var versionExternalIdentifier: Int64?
    public var signedDateMs: Int64?

    public init(
        environment: AppStoreEnvironment, bundleId: String?, appTransactionId: String? = nil,
        appAppleId: Int64? = nil, applicationVersion: String? = nil, originalApplicationVersion: String? = nil,
        originalPurchaseDateMs: Int64? = nil, receiptCreationDateMs: Int64? = nil, preorderDateMs: Int64? = nil,
        receiptType: String? = nil, originalPlatform: String? = nil, versionExternalIdentifier: Int64? = nil,
        signedDateMs: Int64? = nil
    ) {
        self.environment = environment
        self.bundleId = bundleId
        self.appTransactionId = appTransactionId
        self.appAppleId = appAppleId
        self.applicationVersion = applicationVersion
        self.originalApplicationVersion = originalApplicationVersion
        self.originalPurchaseDateMs = originalPurchaseDateMs
        self.receiptCreationDateMs = receiptCreationDateMs
        self.preorderDateMs = preorderDateMs
        self.receiptType = receiptType
        self.originalPlatform = originalPlatform
        self.versionExternalIdentifier = versionExternalIdentifier
        self.signedDateMs = signedDateMs
    }

    /// The result's `app_transaction` for this app transaction of `bundleId`.
    func verified(bundleId: String) -> VerifiedAppTransaction {
        VerifiedAppTransaction(
            appTransactionId: appTransactionId, bundleId: bundleId, appAppleId: appAppleId,
            applicationVersion: applicationVersion, originalApplicationVersion: originalApplicationVersion,
            originalPurchaseDateMs: originalPurchaseDateMs, receiptCreationDateMs: receiptCreationDateMs,
            preorderDateMs: preorderDateMs, receiptType: receiptType, originalPlatform: originalPlatform,
            versionExternalIdentifier: versionExternalIdentifier, environment: environment,
            signedDateMs: signedDateMs)
    }
}

/// The rules for an app transaction Apple's signature vouches for (pure, like `VerdictRules`; rows in
/// `Tests/AppStoreTests/AppTransactionRulesTests.swift`). The first that applies decides:
/// 1. `bundleId` absent or not in `ALLOWED_BUNDLE_IDS` -> `bundle_mismatch` (another app's download).
/// 2. Apple says Sandbox and `SANDBOX_POLICY=reject` -> `sandbox_not_allowed`.
/// 3. Otherwise `verified`, carrying the app transaction and no transactions: it proves that the customer owns the
///    app, never a purchase to credit. Whether it was bought before the app went free is for the app's backend to
///    decide from `original_application_version` (docs/CREDITING.md).
/// Expectations (`expected_transaction_id`, `expected_product_id`, `expected_app_account_token`) name in-app
/// purchases, which an app transaction is not: they are not judged here.
public enum AppTransactionRules {
    public static func evaluate(_ app: AppleAppTransaction, policy: VerdictPolicy) -> Verdict {
        guard let bundleId = app.bundleId, policy.allowedBundleIds.contains(bundleId) else {
            let shown = app.bundleId.map { "'\($0)'" } ?? "absent"
            return .rejected(
                .bundleMismatch, "the app transaction's bundleId (\(shown)) is not in ALLOWED_BUNDLE_IDS")
        }
        if app.environment == .sandbox, policy.sandboxPolicy == .reject {
            return .rejected(
                .sandboxNotAllowed, "the app transaction is from the Sandbox, and SANDBOX_POLICY is reject")
        }
        return .verified(app.verified(bundleId: bundleId))
    }
}
