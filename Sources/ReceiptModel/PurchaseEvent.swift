/// What a crediting service should do after an App Store Server Notification (`type`).
public enum PurchaseEventType: String, Codable, Sendable, CaseIterable {
    /// A purchase or renewal to credit (`ONE_TIME_CHARGE`, `SUBSCRIBED`, `DID_RENEW`, `OFFER_REDEEMED`).
    case credit
    /// A refund to take back (`REFUND`); `transaction.revocation_percentage` is set for prorated refunds.
    case debit
    /// A reversed refund to give back (`REFUND_REVERSED`).
    case recredit
    /// A family-shared entitlement withdrawn (`REVOKE`): no money moves for this user.
    case revoke
    /// A subscription's state changed (expired, failed to renew, renewal preference or status changed, ...).
    case subscriptionStatus = "subscription_status"
    /// Apple asks for consumption data about a refund request (`CONSUMPTION_REQUEST`).
    case consumptionRequest = "consumption_request"
    /// A test notification (`TEST`).
    case test
    /// Nothing to do for crediting (every other type, including types Apple adds later).
    case info
}

/// The essentials of a verified `signedRenewalInfo`.
public struct RenewalSummary: Decodable, Sendable, Equatable {
    public var autoRenewStatus: Int?
    public var autoRenewProductId: String?
    public var expirationIntent: Int?
    public var gracePeriodExpiresDateMs: Int64?
    public var isInBillingRetryPeriod: Bool?
    /// The billing plan of the next renewal (`renewalBillingPlanType`, 2026 commitment plans: `BILLED_UPFRONT`,
    /// `MONTHLY`); null when Apple's data has none.
    public var renewalBillingPlanType: String?
    /// The renewal info's `appTransactionId` (2025; the same as its transaction's); null when Apple's data has none.
    public var appTransactionId: String?
    /// What the next renewal will cost (round 5): `renewalPrice` in milli-units of `currency` (9990 = 9.99) and the
    /// ISO 4217 `currency`, as Apple signed them; null when Apple's data has none. Informational (support, a price
    /// increase's effect); Apple: not for revenue reporting.
    public var renewalPrice: Int64?
    public var currency: String?
    /// The offer that applies to the next renewal (round 5), as Apple wrote it: `offerType` (1 introductory, 2
    /// promotional, 3 offer code, 4 win-back, 5 retention; a later value kept as it is), `offerIdentifier`,
    /// `offerDiscountType`, `offerPeriod`; null without one.
    public var offerType: Int64?
    public var offerIdentifier: String?
    public var offerDiscountType: String?
    public var offerPeriod: String?

    public init(
        autoRenewStatus: Int?, autoRenewProductId: String?, expirationIntent: Int?, gracePeriodExpiresDateMs: Int64?,
        isInBillingRetryPeriod: Bool?, renewalBillingPlanType: String? = nil, appTransactionId: String? = nil,
        renewalPrice: Int64? = nil, currency: String? = nil, offerType: Int64? = nil, offerIdentifier: String? = nil,
        offerDiscountType: String? = nil, offerPeriod: String? = nil
    ) {
        self.appTransactionId = appTransactionId
        self.renewalPrice = renewalPrice
        self.currency = currency
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.offerDiscountType = offerDiscountType
        self.offerPeriod = offerPeriod
        self.renewalBillingPlanType = renewalBillingPlanType
        self.autoRenewStatus = autoRenewStatus
        self.autoRenewProductId = autoRenewProductId
        self.expirationIntent = expirationIntent
        self.gracePeriodExpiresDateMs = gracePeriodExpiresDateMs
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
    }

    enum CodingKeys: String, CodingKey {
        case autoRenewStatus = "auto_renew_status"
        case autoRenewProductId = "auto_renew_product_id"
        case expirationIntent = "expiration_intent"
        case gracePeriodExpiresDateMs = "grace_period_expires_date_ms"
        case isInBillingRetryPeriod = "is_in_billing_retry_period"
        case renewalBillingPlanType = "renewal_billing_plan_type"
        case appTransactionId = "app_transaction_id"
        case renewalPrice = "renewal_price"
        case currency
        case offerType = "offer_type"
        case offerIdentifier = "offer_identifier"
        case offerDiscountType = "offer_discount_type"
        case offerPeriod = "offer_period"
    }
}

/// A money event from a verified App Store Server Notification V2: the message on `EVENTS_TOPIC` (schema version 1),
/// keyed by `original_transaction_id`. At-least-once: `event_id` (Apple's `notificationUUID`) identifies duplicates.
/// See `schemas/event.schema.json`.
public struct PurchaseEvent: Decodable, Sendable, Equatable {
    public static let currentSchemaVersion = 1

    public var schemaVersion: Int
    /// Apple's `notificationUUID`; Apple's retries of one notification carry the same one.
    public var eventId: String
    public var type: PurchaseEventType
    /// Apple's `notificationType`, unchanged.
    public var notificationType: String
    /// Apple's `subtype`, unchanged.
    public var subtype: String?
    public var environment: AppStoreEnvironment?
    public var bundleId: String?
    public var appAppleId: Int64?
    /// The verified `signedTransactionInfo`, as results carry transactions (same `credit_key`, `creditable`, `credit`).
    public var transaction: VerifiedTransaction?
    public var renewal: RenewalSummary?
    /// Apple's `data.status`: 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked.
    public var subscriptionStatus: Int?
    /// True when the transaction is family-shared (`in_app_ownership_type: FAMILY_SHARED`): an entitlement for this
    /// user, not a payment by them.
    public var familyShared: Bool
    public var signedDateMs: Int64
    public var receivedAtMs: Int64
    /// `RESCIND_CONSENT` (2026-12): the verified `appData.signedAppTransactionInfo`'s `appTransactionId`, the app
    /// download whose owner withdrew consent; null for every other notification.
    public var appTransactionId: String?
    /// `CONSUMPTION_REQUEST` (round 5): Apple's `data.consumptionRequestReason`, why the customer asked for a refund
    /// (`UNINTENDED_PURCHASE`, `FULFILLMENT_ISSUE`, `UNSATISFIED_WITH_PURCHASE`, `LEGAL`, `OTHER`; a value Apple adds
    /// later is carried as it is); null when Apple's notification has none (every other type).
    public var consumptionRequestReason: String?

    public init(
        eventId: String, type: PurchaseEventType, notificationType: String, subtype: String?,
        environment: AppStoreEnvironment?, bundleId: String?, appAppleId: Int64?, transaction: VerifiedTransaction?,
        renewal: RenewalSummary?, subscriptionStatus: Int?, familyShared: Bool, signedDateMs: Int64,
        receivedAtMs: Int64, appTransactionId: String? = nil, consumptionRequestReason: String? = nil
    ) {
        self.appTransactionId = appTransactionId
        self.consumptionRequestReason = consumptionRequestReason
        self.schemaVersion = Self.currentSchemaVersion
        self.eventId = eventId
        self.type = type
        self.notificationType = notificationType
        self.subtype = subtype
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.transaction = transaction
        self.renewal = renewal
        self.subscriptionStatus = subscriptionStatus
        self.familyShared = familyShared
        self.signedDateMs = signedDateMs
        self.receivedAtMs = receivedAtMs
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case eventId = "event_id"
        case type
        case notificationType = "notification_type"
        case subtype, environment
        case bundleId = "bundle_id"
        case appAppleId = "app_apple_id"
        case appTransactionId = "app_transaction_id"
        case consumptionRequestReason = "consumption_request_reason"
        case transaction, renewal
        case subscriptionStatus = "subscription_status"
        case familyShared = "family_shared"
        case signedDateMs = "signed_date_ms"
        case receivedAtMs = "received_at_ms"
    }
}
