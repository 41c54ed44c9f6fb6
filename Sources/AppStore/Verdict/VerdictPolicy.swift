import ReceiptModel

/// What a sandbox receipt leads to.
public enum SandboxPolicy: String, Sendable, CaseIterable {
    /// Verified normally; results say `environment: Sandbox` and credit keys start `apple:sandbox:`.
    case accept
    /// Rejected with `sandbox_not_allowed`.
    case reject
}

/// How a submission's `expected_app_account_token` binds a purchase to an account (`APP_ACCOUNT_TOKEN_POLICY`).
public enum AppAccountTokenPolicy: String, Sendable, CaseIterable {
    /// Compared when the submission names one: a transaction carrying another token (or none) is `account_mismatch`.
    case check
    /// Every submission must name one, and only transactions carrying it are creditable; a submission without one
    /// is `account_mismatch`. For apps that set `appAccountToken` on every purchase.
    case require
}

/// The operator's rules for every receipt (`ALLOWED_BUNDLE_IDS`, `SANDBOX_POLICY`, `APP_ACCOUNT_TOKEN_POLICY`).
public struct VerdictPolicy: Sendable, Equatable {
    /// Bundle ids whose receipts may be verified; compared exactly. Never empty in a running service.
    public var allowedBundleIds: Set<String>
    public var sandboxPolicy: SandboxPolicy
    public var appAccountTokenPolicy: AppAccountTokenPolicy

    public init(
        allowedBundleIds: Set<String>, sandboxPolicy: SandboxPolicy = .accept,
        appAccountTokenPolicy: AppAccountTokenPolicy = .check
    ) {
        self.allowedBundleIds = allowedBundleIds
        self.sandboxPolicy = sandboxPolicy
        self.appAccountTokenPolicy = appAccountTokenPolicy
    }

    /// The rules reject a proof of `bundleId` in `environment` whatever Apple would say: the bundle is absent or not
    /// allowed, or it is a sandbox one under `SANDBOX_POLICY=reject`. Asking Apple about it would spend a call for
    /// nothing.
    public func rejectsUnasked(bundleId: String?, environment: AppStoreEnvironment?) -> Bool {
        guard let bundleId, allowedBundleIds.contains(bundleId) else { return true }
        return environment == .sandbox && sandboxPolicy == .reject
    }
}

/// What the submitter says it bought (`expected_transaction_id`, `expected_product_id`,
/// `expected_app_account_token`); all optional.
public struct VerificationExpectations: Sendable, Equatable {
    public var transactionId: String?
    public var productId: String?
    /// Lower-cased UUID.
    public var appAccountToken: String?

    public init(transactionId: String? = nil, productId: String? = nil, appAccountToken: String? = nil) {
        self.transactionId = transactionId.flatMap { $0.isEmpty ? nil : $0 }
        self.productId = productId.flatMap { $0.isEmpty ? nil : $0 }
        self.appAccountToken = appAccountToken.flatMap { $0.isEmpty ? nil : $0.lowercased() }
    }

    /// The expectations a submission states.
    public init(_ submission: Submission) {
        self.init(
            transactionId: submission.expectedTransactionId, productId: submission.expectedProductId,
            appAccountToken: submission.expectedAppAccountToken)
    }
}
