/// A verified StoreKit 2 app transaction (`AppTransaction`, Apple's `JWSAppTransactionDecodedPayload`), as a
/// `signed_app_transaction` result carries it in `app_transaction`. It proves that the customer owns the app, never
/// an in-app purchase: such a result has no transactions and credits nothing. Whether the customer bought the app
/// before it went free is the app backend's decision, from `original_application_version` (docs/CREDITING.md).
///
/// Ids are strings, dates epoch milliseconds, absent values null (never omitted). It is also `AppTransactionRules`'
/// input, as Apple signed it (the device's copy, or Get App Transaction Info's `signedAppTransactionInfo`): the rules
/// pass it on unchanged when they verify it.
public struct VerifiedAppTransaction: Decodable, Sendable, Equatable {
    /// One per Apple Account (and family member) that downloaded the app; the same after a redownload, a refund or
    /// on another device. Purchases carry it as their `app_transaction_id`.
    public var appTransactionId: String?
    /// The payload's `bundleId`; nil when Apple's payload has none, which `AppTransactionRules` rejects, so a
    /// result's app transaction always names one of `ALLOWED_BUNDLE_IDS`.
    public var bundleId: String?
    /// The app's Apple id (`appAppleId`); Apple writes none in the sandbox.
    public var appAppleId: Int64?
    /// The app version the receipt was created for (`applicationVersion`: `CFBundleVersion`).
    public var applicationVersion: String?
    /// The version the customer first downloaded or bought (`originalApplicationVersion`): `CFBundleVersion` on iOS,
    /// `CFBundleShortVersionString` on macOS; in the sandbox always `1.0`.
    public var originalApplicationVersion: String?
    /// When the customer first downloaded or bought the app (`originalPurchaseDate`).
    public var originalPurchaseDateMs: Int64?
    /// `receiptCreationDate`.
    public var receiptCreationDateMs: Int64?
    /// `preorderDate`: set while the app is pre-ordered and not yet released.
    public var preorderDateMs: Int64?
    /// `receiptType` (`Production`, `Sandbox`, ...), as Apple wrote it.
    public var receiptType: String?
    /// `originalPlatform` (2025: `iOS`, `macOS`, `tvOS`, `visionOS`), as Apple wrote it.
    public var originalPlatform: String?
    /// `versionExternalIdentifier` (Apple's number for the app version; 0 in the sandbox).
    public var versionExternalIdentifier: Int64?
    public var environment: AppStoreEnvironment
    /// When the App Store signed the answer the verdict rests on (`signedDate`).
    public var signedDateMs: Int64?

    public init(
        appTransactionId: String?, bundleId: String?, appAppleId: Int64? = nil, applicationVersion: String? = nil,
        originalApplicationVersion: String? = nil, originalPurchaseDateMs: Int64? = nil,
        receiptCreationDateMs: Int64? = nil, preorderDateMs: Int64? = nil, receiptType: String? = nil,
        originalPlatform: String? = nil, versionExternalIdentifier: Int64? = nil, environment: AppStoreEnvironment,
        signedDateMs: Int64? = nil
    ) {
        self.appTransactionId = appTransactionId
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.applicationVersion = applicationVersion
        self.originalApplicationVersion = originalApplicationVersion
        self.originalPurchaseDateMs = originalPurchaseDateMs
        self.receiptCreationDateMs = receiptCreationDateMs
        self.preorderDateMs = preorderDateMs
        self.receiptType = receiptType
        self.originalPlatform = originalPlatform
        self.versionExternalIdentifier = versionExternalIdentifier
        self.environment = environment
        self.signedDateMs = signedDateMs
    }

    enum CodingKeys: String, CodingKey {
        case appTransactionId = "app_transaction_id"
        case bundleId = "bundle_id"
        case appAppleId = "app_apple_id"
        case applicationVersion = "application_version"
        case originalApplicationVersion = "original_application_version"
        case originalPurchaseDateMs = "original_purchase_date_ms"
        case receiptCreationDateMs = "receipt_creation_date_ms"
        case preorderDateMs = "preorder_date_ms"
        case receiptType = "receipt_type"
        case originalPlatform = "original_platform"
        case versionExternalIdentifier = "version_external_identifier"
        case environment
        case signedDateMs = "signed_date_ms"
    }
}
