import ReceiptModel

/// Apple's evidence about a proof of purchase Apple accepted, whatever source answered: the input of the verdict
/// rules (`VerdictRules`).
///
/// verifyReceipt fills it from its answer (`receipt.in_app`, `latest_receipt_info`); an App Store Server API or
/// StoreKit 2 source fills `inApp` with the transaction(s) the proof names and `latestReceiptInfo` with Apple's
/// current view of them (transaction history), so that a refund Apple knows of counts even when the proof predates it.
public struct AppleReceipt: Sendable, Equatable {
    /// What Apple's own data says (verifyReceipt's `environment`, a signed payload's `environment`); the endpoint
    /// that answered only when Apple named none. Results, credit keys and `SANDBOX_POLICY` use it.
    public var environment: AppStoreEnvironment
    /// Apple's status (0, or 21006 for an expired iOS 6 subscription receipt, which is still evaluated).
    public var status: Int
    public var bundleId: String?
    /// The purchases the proof itself holds.
    public var inApp: [AppleTransaction]
    /// Apple's current state of the proof's purchases (the latest renewal of each subscription, refunds made after
    /// the proof was issued).
    public var latestReceiptInfo: [AppleTransaction]
    /// Transactions in Apple's answer that could not be used (missing ids or dates) and are left out above.
    public var unusableTransactionCount: Int
    /// The ids of those that had one: an expected transaction among them makes the receipt `invalid_receipt`, and a
    /// usable transaction with the same id is not creditable (Apple's data about it could not all be read).
    public var unusableTransactionIds: [String]

    public init(
        environment: AppStoreEnvironment, status: Int = 0, bundleId: String?, inApp: [AppleTransaction],
        latestReceiptInfo: [AppleTransaction] = [], unusableTransactionCount: Int = 0,
        unusableTransactionIds: [String] = []
    ) {
        self.environment = environment
        self.status = status
        self.bundleId = bundleId
        self.inApp = inApp
        self.latestReceiptInfo = latestReceiptInfo
        self.unusableTransactionCount = unusableTransactionCount
        self.unusableTransactionIds = unusableTransactionIds
    }
}
