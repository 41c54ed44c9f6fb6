/// A decoded `JWSAppTransactionDecodedPayload`: the app transaction a StoreKit 2 app holds (`AppTransaction.shared`)
/// and Get App Transaction Info answers (`signedAppTransactionInfo`). It describes the customer's purchase (or
/// download) of the app itself. Decoded as tolerantly as `JWSTransactionPayload`: ids may be strings or numbers,
/// dates epoch milliseconds (fractions dropped), unknown fields ignored, unknown enum values kept.
///
/// Apple's app transaction has no `environment` and no `signedDate` member (Apple's libraries' `AppTransaction`
/// models and the Xcode-signed app transaction in their test data): its environment is `receiptType`, and the date
/// the App Store signed it is `receiptCreationDate`. Neither is read from any other member.
public struct JWSAppTransactionPayload: Sendable, Equatable, Decodable {
    /// The environment (`Production`, `Sandbox`, `Xcode`, `LocalTesting`), as Apple wrote it.
    public var receiptType: String?
    public var appAppleId: Int64?
    public var bundleId: String?
    /// `CFBundleVersion` of the app the receipt was created for.
    public var applicationVersion: String?
    public var versionExternalIdentifier: Int64?
    /// Epoch ms.
    public var receiptCreationDate: Int64?
    /// Epoch ms of the customer's first download or purchase of the app.
    public var originalPurchaseDate: Int64?
    /// The version first downloaded or bought (what "bought before it went free" is decided on).
    public var originalApplicationVersion: String?
    /// For the device to check (base64, with the nonce); the server cannot and does not.
    public var deviceVerification: String?
    public var deviceVerificationNonce: String?
    /// Epoch ms; present while the app is pre-ordered.
    public var preorderDate: Int64?
    /// One per Apple Account (and family member) and app, stable across redownloads and devices (2025).
    public var appTransactionId: String?
    /// `iOS`, `macOS`, `tvOS`, `visionOS` (2025).
    public var originalPlatform: String?

    public init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: AnyCodingKey.self)
        receiptType = fields.lenientString("receiptType")
        appAppleId = fields.lenientInt("appAppleId")
        bundleId = fields.lenientString("bundleId")
        applicationVersion = fields.lenientString("applicationVersion")
        versionExternalIdentifier = fields.lenientInt("versionExternalIdentifier")
        receiptCreationDate = fields.lenientMillis("receiptCreationDate")
        originalPurchaseDate = fields.lenientMillis("originalPurchaseDate")
        originalApplicationVersion = fields.lenientString("originalApplicationVersion")
        deviceVerification = fields.lenientString("deviceVerification")
        deviceVerificationNonce = fields.lenientString("deviceVerificationNonce")
        preorderDate = fields.lenientMillis("preorderDate")
        appTransactionId = fields.lenientString("appTransactionId")
        originalPlatform = fields.lenientString("originalPlatform")
    }

    /// The environment the app transaction names: its `receiptType` (Apple's `environment` type).
    public var environment: SignedEnvironment? { receiptType.map(SignedEnvironment.init(rawValue:)) }

    /// When the App Store signed it: `receiptCreationDate` ("the date that the App Store signs a JWS app
    /// transaction"; Apple's Swift library's `signedDate` is this member).
    public var signedDate: Int64? { receiptCreationDate }

    /// The time the chain is validated at: `receiptCreationDate`, as Apple's Python and Node libraries do for app
    /// transactions.
    public var validationDateMs: Int64? { receiptCreationDate }
}
