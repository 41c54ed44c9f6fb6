import Foundation
import ServiceSupport

/// An app transaction the fake App Store knows (`AppTransaction`: a customer's purchase or download of the app), as
/// registered with `POST /admin/app-transactions` (JSON, snake case) or `FakeAppStoreServer.register(_:)`. Every
/// field but `id` (the `appTransactionId`) is optional; see `Sources/FakeAppStore/README.md`.
///
/// Unregistered numeric ids are known too: a production app transaction of the fake's default bundle, first
/// bought at version `1.0` (`FakeAppTransaction.defaultAppTransaction(id:)`), so `make dev` and benchmarks need no
/// setup.
public struct FakeAppTransaction: Codable, Sendable, Equatable {
    /// The `appTransactionId`.
    public var id: String
    /// `Production` (default) or `Sandbox`: the environment whose API knows it (the other answers 4040019).
    public var environment: String?
    public var bundleId: String?
    /// Written in production only (Apple writes none in the sandbox); default 1234567890.
    public var appAppleId: Int64?
    /// `CFBundleVersion` of the installed app (default `2.0`).
    public var applicationVersion: String?
    /// The version first bought or downloaded (default `1.0`; Apple writes `1.0` in the sandbox).
    public var originalApplicationVersion: String?
    public var originalPurchaseDateMs: Int64?
    /// Present: pre-ordered, not yet released.
    public var preorderDateMs: Int64?
    /// `iOS` (default), `macOS`, `tvOS`, `visionOS`.
    public var originalPlatform: String?
    /// In-app transaction ids of the same customer: Get App Transaction Info takes any of them too.
    public var transactionIds: [String]?
    /// Scripted failures of Get App Transaction Info, consumed in order (as a transaction's).
    public var failures: [FakeServerTransaction.Failure]?

    public init(
        id: String, environment: String? = nil, bundleId: String? = nil, appAppleId: Int64? = nil,
        applicationVersion: String? = nil, originalApplicationVersion: String? = nil,
        originalPurchaseDateMs: Int64? = nil, preorderDateMs: Int64? = nil, originalPlatform: String? = nil,
        transactionIds: [String]? = nil, failures: [FakeServerTransaction.Failure]? = nil
    ) {
        self.id = id
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.applicationVersion = applicationVersion
        self.originalApplicationVersion = originalApplicationVersion
        self.originalPurchaseDateMs = originalPurchaseDateMs
        self.preorderDateMs = preorderDateMs
        self.originalPlatform = originalPlatform
        self.transactionIds = transactionIds
        self.failures = failures
    }

    enum CodingKeys: String, CodingKey {
        case id, environment, failures
        case bundleId = "bundle_id"
        case appAppleId = "app_apple_id"
        case applicationVersion = "application_version"
        case originalApplicationVersion = "original_application_version"
        case originalPurchaseDateMs = "original_purchase_date_ms"
        case preorderDateMs = "preorder_date_ms"
        case originalPlatform = "original_platform"
        case transactionIds = "transaction_ids"
    }

    /// The first purchase date of unregistered app transactions: fixed, so the same id always says the same.
    public static let defaultOriginalPurchaseDateMs: Int64 = 1_600_000_000_000
    public static let defaultAppAppleId: Int64 = 1_234_567_890

    /// What an unregistered numeric id is: a production app transaction of the default bundle, bought at `1.0`.
    public static func defaultAppTransaction(id: String) -> FakeAppTransaction {
        FakeAppTransaction(id: id, environment: "Production")
    }

    var resolvedEnvironment: String { environment ?? "Production" }

    /// The `JWSAppTransactionDecodedPayload` JSON Apple would sign for it, signed at `signedDateMs` (its
    /// `receiptCreationDate`).
    func payloadJSON(bundleId defaultBundleId: String, signedDateMs: Int64) -> [UInt8] {
        let sandbox = resolvedEnvironment.caseInsensitiveCompare("Sandbox") == .orderedSame
        var fields = FakeJSONObject()
        fields.string("receiptType", sandbox ? "Sandbox" : "Production")
        fields.integer("appAppleId", sandbox ? nil : (appAppleId ?? Self.defaultAppAppleId))
        fields.string("bundleId", bundleId ?? defaultBundleId)
        fields.string("applicationVersion", applicationVersion ?? "2.0")
        fields.integer("versionExternalIdentifier", sandbox ? 0 : 834_289_191)
        fields.integer("receiptCreationDate", signedDateMs)
        fields.integer("originalPurchaseDate", originalPurchaseDateMs ?? Self.defaultOriginalPurchaseDateMs)
        fields.string("originalApplicationVersion", sandbox ? "1.0" : (originalApplicationVersion ?? "1.0"))
        // A device checks these against its own identifier; fixed values, the server never reads them.
        fields.string("deviceVerification", "ZmFrZS1kZXZpY2UtdmVyaWZpY2F0aW9u")
        fields.string("deviceVerificationNonce", "9f3e2c1a-4b5d-4e6f-8a7b-0c1d2e3f4a5b")
        fields.integer("preorderDate", preorderDateMs)
        fields.string("appTransactionId", id)
        fields.string("originalPlatform", originalPlatform ?? "iOS")
        // Apple's app transaction has neither `environment` (its environment is `receiptType`) nor `signedDate` (the
        // signing date is `receiptCreationDate`): Apple's libraries' `AppTransaction` and their Xcode-signed sample.
        return fields.bytes
    }
}
