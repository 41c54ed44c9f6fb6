/// The `data` object of a Server Notification V2: app metadata and the signed transaction / renewal info.
public struct NotificationData: Sendable, Equatable, Decodable {
    public var environment: SignedEnvironment?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var bundleVersion: String?
    /// A JWS (`JWSTransactionPayload`), to verify separately.
    public var signedTransactionInfo: String?
    /// A JWS (`JWSRenewalInfoPayload`), to verify separately.
    public var signedRenewalInfo: String?
    /// Subscription status at `signedDate`: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    public var status: Int64?
    /// `UNINTENDED_PURCHASE`, `FULFILLMENT_ISSUE`, `UNSATISFIED_WITH_PURCHASE`, `LEGAL`, `OTHER`.
    public var consumptionRequestReason: String?

    public init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: AnyCodingKey.self)
        environment = fields.lenient("environment")
        appAppleId = fields.lenientInt("appAppleId")
        bundleId = fields.lenientString("bundleId")
        bundleVersion = fields.lenientString("bundleVersion")
        signedTransactionInfo = fields.lenientString("signedTransactionInfo")
        signedRenewalInfo = fields.lenientString("signedRenewalInfo")
        status = fields.lenientInt("status")
        consumptionRequestReason = fields.lenientString("consumptionRequestReason")
    }
}
