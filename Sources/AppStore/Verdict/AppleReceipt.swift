import ReceiptModel

/// What a backend learned about a receipt Apple accepted, independent of the API that answered: the input of the
/// verdict rules.
public struct AppleReceipt: Sendable, Equatable {
    /// The environment whose endpoint accepted the receipt (recorded in results and credit keys).
    public var environment: AppStoreEnvironment
    /// Apple's status (0, or 21006 for an expired iOS 6 subscription receipt, which is still evaluated).
    public var status: Int
    public var bundleId: String?
    public var inApp: [AppleTransaction]
    public var latestReceiptInfo: [AppleTransaction]
    /// Transactions in Apple's answer that could not be used (missing ids or dates) and are left out above.
    public var unusableTransactionCount: Int
    /// The ids of those that had one: an expected transaction among them makes the receipt `invalid_receipt`.
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
