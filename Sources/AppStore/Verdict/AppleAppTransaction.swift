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
