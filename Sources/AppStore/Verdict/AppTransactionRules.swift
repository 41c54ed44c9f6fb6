import ReceiptModel

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
    public static func evaluate(_ app: VerifiedAppTransaction, policy: VerdictPolicy) -> Verdict {
        guard let bundleId = app.bundleId, policy.allowedBundleIds.contains(bundleId) else {
            let shown = app.bundleId.map { "'\($0)'" } ?? "absent"
            return .rejected(
                .bundleMismatch, "the app transaction's bundleId (\(shown)) is not in ALLOWED_BUNDLE_IDS")
        }
        if app.environment == .sandbox, policy.sandboxPolicy == .reject {
            return .rejected(
                .sandboxNotAllowed, "the app transaction is from the Sandbox, and SANDBOX_POLICY is reject")
        }
        return .verified(app)
    }
}
