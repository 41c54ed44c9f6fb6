/// What a sandbox receipt leads to.
public enum SandboxPolicy: String, Sendable, CaseIterable {
    /// Verified normally; results say `environment: Sandbox` and credit keys start `apple:sandbox:`.
    case accept
    /// Rejected with `sandbox_not_allowed`.
    case reject
}

/// The operator's rules for every receipt (`ALLOWED_BUNDLE_IDS`, `SANDBOX_POLICY`).
public struct VerdictPolicy: Sendable, Equatable {
    /// Bundle ids whose receipts may be verified; compared exactly. Never empty in a running service.
    public var allowedBundleIds: Set<String>
    public var sandboxPolicy: SandboxPolicy

    public init(allowedBundleIds: Set<String>, sandboxPolicy: SandboxPolicy = .accept) {
        self.allowedBundleIds = allowedBundleIds
        self.sandboxPolicy = sandboxPolicy
    }
}

/// What the submitter says it bought (`expected_transaction_id`, `expected_product_id`); both optional.
public struct VerificationExpectations: Sendable, Equatable {
    public var transactionId: String?
    public var productId: String?

    public init(transactionId: String? = nil, productId: String? = nil) {
        self.transactionId = transactionId.flatMap { $0.isEmpty ? nil : $0 }
        self.productId = productId.flatMap { $0.isEmpty ? nil : $0 }
    }
}
