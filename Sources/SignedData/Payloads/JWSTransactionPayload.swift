import ServiceSupport

/// A decoded `JWSTransactionDecodedPayload` (App Store Server API §2.8): one purchase, renewal or restore.
///
/// Decoding is tolerant: ids may be JSON strings or numbers, dates are epoch milliseconds (Xcode writes fractions,
/// dropped here), unknown fields are ignored and unknown enum values kept. Only a payload that is not a JSON object
/// fails to decode. `revocationDate`, `revocationPercentage`, `quantity` and `isUpgraded` are `ReadableField`s so
/// that a present but unreadable value is seen (and refused by the money rules) instead of passing as "not revoked",
/// "one" or "not upgraded".
public struct JWSTransactionPayload: Sendable, Equatable, Decodable {
    public var transactionId: String?
    public var originalTransactionId: String?
    public var webOrderLineItemId: String?
    public var bundleId: String?
    public var productId: String?
    public var subscriptionGroupIdentifier: String?
    /// Epoch ms of the charge.
    public var purchaseDate: Int64?
    public var originalPurchaseDate: Int64?
    public var expiresDate: Int64?
    /// How many were bought at once (Apple allows up to 10 of a consumable).
    public var quantity: ReadableField<Int64>
    public var type: ProductType?
    /// The app's customer id (a UUID string) bound at purchase time.
    public var appAccountToken: String?
    public var inAppOwnershipType: OwnershipType?
    /// Epoch ms at which the App Store signed the JWS.
    public var signedDate: Int64?
    /// 0: other, 1: an issue in the app.
    public var revocationReason: Int64?
    /// Epoch ms of the refund or revocation; present means revoked.
    public var revocationDate: ReadableField<Int64>
    public var revocationType: RevocationType?
    /// Milliunits of the transaction refunded (50000 = 50 %).
    public var revocationPercentage: ReadableField<Int64>
    /// The subscription period was replaced by an upgrade.
    public var isUpgraded: ReadableField<Bool>
    /// 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public var offerType: Int64?
    public var offerIdentifier: String?
    public var offerDiscountType: String?
    public var offerPeriod: String?
    public var environment: SignedEnvironment?
    /// ISO 3166-1 alpha-3 (`USA`).
    public var storefront: String?
    public var storefrontId: String?
    public var transactionReason: TransactionReason?
    /// ISO 4217.
    public var currency: String?
    /// Milliunits of `currency` (10990 = 10.99).
    public var price: Int64?
    public var appTransactionId: String?
    /// How a commitment plan bills (2026: `BILLED_UPFRONT`, `MONTHLY`; a value Apple adds later is kept).
    public var billingPlanType: String?
    /// The 12-month commitment plan's details (2026), kept as the JSON object Apple wrote; nil when absent or not
    /// an object.
    public var commitmentInfo: JSONValue?

    public init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: AnyCodingKey.self)
        transactionId = fields.lenientString("transactionId")
        originalTransactionId = fields.lenientString("originalTransactionId")
        webOrderLineItemId = fields.lenientString("webOrderLineItemId")
        bundleId = fields.lenientString("bundleId")
        productId = fields.lenientString("productId")
        subscriptionGroupIdentifier = fields.lenientString("subscriptionGroupIdentifier")
        purchaseDate = fields.lenientMillis("purchaseDate")
        originalPurchaseDate = fields.lenientMillis("originalPurchaseDate")
        expiresDate = fields.lenientMillis("expiresDate")
        quantity = fields.readableInt("quantity")
        type = fields.lenient("type")
        appAccountToken = fields.lenientString("appAccountToken")
        inAppOwnershipType = fields.lenient("inAppOwnershipType")
        signedDate = fields.lenientMillis("signedDate")
        revocationReason = fields.lenientInt("revocationReason")
        revocationDate = fields.readableInt("revocationDate")
        revocationType = fields.lenient("revocationType")
        revocationPercentage = fields.readableInt("revocationPercentage")
        isUpgraded = fields.readableBool("isUpgraded")
        offerType = fields.lenientInt("offerType")
        offerIdentifier = fields.lenientString("offerIdentifier")
        offerDiscountType = fields.lenientString("offerDiscountType")
        offerPeriod = fields.lenientString("offerPeriod")
        environment = fields.lenient("environment")
        storefront = fields.lenientString("storefront")
        storefrontId = fields.lenientString("storefrontId")
        transactionReason = fields.lenient("transactionReason")
        currency = fields.lenientString("currency")
        price = fields.lenientInt("price")
        appTransactionId = fields.lenientString("appTransactionId")
        billingPlanType = fields.lenientString("billingPlanType")
        commitmentInfo = fields.lenientObject("commitmentInfo")
    }
}
