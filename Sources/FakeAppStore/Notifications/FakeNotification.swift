import Crypto
import Foundation
import SignedData
import TestPKI

/// An App Store Server Notification V2 the fake can sign: Apple's `ResponseBodyV2DecodedPayload` with its signed
/// transaction and renewal info. `FakeNotification.make` fills what each notification type carries the way Apple does
/// (§3.3 of the App Store reference); every field can be changed before signing.
public struct FakeNotification: Sendable, Equatable {
    /// Where the app's `environment`, `bundleId` and `appAppleId` travel in the payload.
    public enum Container: String, Sendable, Equatable {
        /// `data` (in-app purchase events, TEST), with `signedTransactionInfo` / `signedRenewalInfo`.
        case data
        /// `summary` (RENEWAL_EXTENSION / SUMMARY).
        case summary
        /// `appData` (RESCIND_CONSENT).
        case appData
        /// `externalPurchaseToken` (EXTERNAL_PURCHASE_TOKEN): no environment field; a Sandbox token's
        /// `externalPurchaseId` starts with `SANDBOX`.
        case externalPurchaseToken
    }

    public var notificationType: String
    public var subtype: String?
    public var notificationUUID: String
    public var bundleId: String
    /// `Production`, `Sandbox` (or `Xcode`, `LocalTesting` to test refusals).
    public var environment: String
    public var appAppleId: Int64?
    public var signedDateMs: Int64
    public var container: Container
    public var transaction: FakeSignedTransaction?
    public var renewal: FakeRenewalInfo?
    /// `data.status`: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    public var status: Int?
    public var consumptionRequestReason: String?
    /// RESCIND_CONSENT's app transaction (`appData.signedAppTransactionInfo`, signed with the notification).
    public var appTransactionId: String?

    /// What `make` can be told; everything has a default.
    public struct Options: Sendable, Equatable {
        public var transactionId: String?
        public var originalTransactionId: String?
        public var productId: String?
        /// `consumable`, `non_consumable`, `auto_renewable` or `non_renewing` (default by notification type).
        public var productType: String?
        public var bundleId = "com.example.game"
        public var environment = "Production"
        public var appAppleId: Int64? = 1_234_567_890
        public var notificationUUID: String?
        public var signedDateMs: Int64?
        /// `PURCHASED` or `FAMILY_SHARED` (default `PURCHASED`, `FAMILY_SHARED` for REVOKE).
        public var ownershipType: String?
        /// For REFUND: thousandths of a percent refunded; with it the refund is `REFUND_PRORATED`.
        public var revocationPercentage: Int?
        public var revocationType: String?
        public var status: Int?
        /// Marks the transaction's period as replaced by an upgrade (`isUpgraded`).
        public var isUpgraded: Bool?
        public var quantity: Int?
        /// RESCIND_CONSENT: the `appTransactionId` of its app transaction (default `705000000000001`).
        public var appTransactionId: String?
        /// CONSUMPTION_REQUEST: `data.consumptionRequestReason` (default `UNINTENDED_PURCHASE`).
        public var consumptionRequestReason: String?

        public init() {}
    }

    public init(
        notificationType: String, subtype: String?, notificationUUID: String, bundleId: String, environment: String,
        appAppleId: Int64?, signedDateMs: Int64, container: Container = .data,
        transaction: FakeSignedTransaction? = nil, renewal: FakeRenewalInfo? = nil, status: Int? = nil,
        consumptionRequestReason: String? = nil
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.bundleId = bundleId
        self.environment = environment
        self.appAppleId = appAppleId
        self.signedDateMs = signedDateMs
        self.container = container
        self.transaction = transaction
        self.renewal = renewal
        self.status = status
        self.consumptionRequestReason = consumptionRequestReason
    }

    private static let subscriptionTypes: Set<String> = [
        "SUBSCRIBED", "DID_RENEW", "OFFER_REDEEMED", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS",
        "DID_FAIL_TO_RENEW", "GRACE_PERIOD_EXPIRED", "EXPIRED", "PRICE_INCREASE", "RENEWAL_EXTENDED",
        "RENEWAL_EXTENSION",
    ]
    private static let withoutTransaction: Set<String> = ["TEST", "EXTERNAL_PURCHASE_TOKEN", "RESCIND_CONSENT"]
    private static let appleTypes = [
        "consumable": "Consumable", "non_consumable": "Non-Consumable", "auto_renewable": "Auto-Renewable Subscription",
        "non_renewing": "Non-Renewing Subscription",
    ]

    /// A notification of `type` / `subtype` shaped as Apple sends it: a refund carries a revoked transaction, REVOKE a
    /// family-shared one, subscription types an auto-renewable transaction with renewal info and `status`, TEST and
    /// the token / consent types no transaction. Unknown types get a bare `data`.
    public static func make(type: String, subtype: String? = nil, options: Options = Options()) -> FakeNotification {
        let now = options.signedDateMs ?? Int64(Date().timeIntervalSince1970 * 1000)
        let uuid = options.notificationUUID ?? UUID().uuidString.lowercased()
        var notification = FakeNotification(
            notificationType: type, subtype: subtype, notificationUUID: uuid, bundleId: options.bundleId,
            environment: options.environment, appAppleId: options.appAppleId, signedDateMs: now)
        switch (type, subtype) {
        case ("RENEWAL_EXTENSION", "SUMMARY"):
            notification.container = .summary
            return notification
        case ("EXTERNAL_PURCHASE_TOKEN", _):
            notification.container = .externalPurchaseToken
            return notification
        case ("RESCIND_CONSENT", _):
            notification.container = .appData
            notification.appTransactionId = options.appTransactionId ?? "705000000000001"
            return notification
        default:
            break
        }
        guard !withoutTransaction.contains(type), FakeNotificationTypes.subtypes[type] != nil else {
            return notification
        }
        let subscription = subscriptionTypes.contains(type)
        let productType =
            options.productType.flatMap { appleTypes[$0] }
            ?? (subscription ? "Auto-Renewable Subscription" : (type == "REVOKE" ? "Non-Consumable" : "Consumable"))
        let transactionId = options.transactionId ?? String(2_000_000_000_000_000 + Int64.random(in: 0..<1_000_000_000))
        var transaction = FakeSignedTransaction(
            transactionId: transactionId, originalTransactionId: options.originalTransactionId ?? transactionId,
            productId: options.productId ?? (subscription ? "one_month_subscription" : "gems_100"),
            bundleId: options.bundleId, type: productType, purchaseDateMs: now - 60_000,
            environment: options.environment, signedDateMs: now)
        transaction.ownershipType = options.ownershipType ?? (type == "REVOKE" ? "FAMILY_SHARED" : "PURCHASED")
        transaction.isUpgraded = options.isUpgraded
        if let quantity = options.quantity { transaction.quantity = quantity }
        if productType == "Auto-Renewable Subscription" {
            transaction.expiresDateMs = now - 60_000 + 30 * 86_400_000
            transaction.webOrderLineItemId = String(Int64(transactionId).map { $0 + 1 } ?? 1)
            transaction.transactionReason = type == "DID_RENEW" ? "RENEWAL" : "PURCHASE"
        }
        switch type {
        case "REFUND":
            transaction.revocationDateMs = now - 1_000
            transaction.revocationReason = 0
            transaction.revocationType =
                options.revocationType ?? (options.revocationPercentage == nil ? "REFUND_FULL" : "REFUND_PRORATED")
            transaction.revocationPercentage = options.revocationPercentage
        case "REVOKE":
            transaction.revocationDateMs = now - 1_000
            transaction.revocationReason = 0
            transaction.revocationType = options.revocationType ?? "FAMILY_REVOKE"
        case "CONSUMPTION_REQUEST":
            notification.consumptionRequestReason = options.consumptionRequestReason ?? "UNINTENDED_PURCHASE"
        default:
            break
        }
        notification.transaction = transaction
        if productType == "Auto-Renewable Subscription" {
            var renewal = FakeRenewalInfo(
                originalTransactionId: transaction.originalTransactionId, productId: transaction.productId,
                environment: options.environment, signedDateMs: now)
            renewal.renewalDateMs = transaction.expiresDateMs
            switch type {
            case "EXPIRED", "GRACE_PERIOD_EXPIRED":
                renewal.autoRenewStatus = 0
                renewal.expirationIntent = subtype == "BILLING_RETRY" || type == "GRACE_PERIOD_EXPIRED" ? 2 : 1
                notification.status = 2
            case "DID_FAIL_TO_RENEW":
                renewal.isInBillingRetryPeriod = true
                if subtype == "GRACE_PERIOD" { renewal.gracePeriodExpiresDateMs = now + 16 * 86_400_000 }
                notification.status = subtype == "GRACE_PERIOD" ? 4 : 3
            case "DID_CHANGE_RENEWAL_STATUS":
                renewal.autoRenewStatus = subtype == "AUTO_RENEW_DISABLED" ? 0 : 1
                notification.status = 1
            default:
                notification.status = 1
            }
            notification.renewal = renewal
        }
        if let status = options.status { notification.status = status }
        return notification
    }

    /// The decoded payload, with the signed transaction and renewal info given as JWS.
    public func payloadJSON(
        signedTransactionInfo: String?, signedRenewalInfo: String?, signedAppTransactionInfo: String? = nil
    ) -> [UInt8] {
        var app = FakeJSONObject()
        switch container {
        case .data:
            app.string("environment", environment)
            app.integer("appAppleId", appAppleId)
            app.string("bundleId", bundleId)
            app.string("bundleVersion", "1.0")
            app.string("signedTransactionInfo", signedTransactionInfo)
            app.string("signedRenewalInfo", signedRenewalInfo)
            app.integer("status", status.map(Int64.init))
            app.string("consumptionRequestReason", consumptionRequestReason)
        case .summary:
            app.string("requestIdentifier", notificationUUID)
            app.string("environment", environment)
            app.integer("appAppleId", appAppleId)
            app.string("bundleId", bundleId)
            app.string("productId", "one_month_subscription")
            app.raw("storefrontCountryCodes", "[\"USA\"]")
            app.integer("succeededCount", 42)
            app.integer("failedCount", 0)
        case .appData:
            app.integer("appAppleId", appAppleId)
            app.string("bundleId", bundleId)
            app.string("environment", environment)
            app.string("signedAppTransactionInfo", signedAppTransactionInfo)
        case .externalPurchaseToken:
            let prefix = environment == "Sandbox" ? "SANDBOX" : ""
            app.string("externalPurchaseId", prefix + notificationUUID)
            app.integer("tokenCreationDate", signedDateMs - 60_000)
            app.integer("appAppleId", appAppleId)
            app.string("bundleId", bundleId)
        }
        var payload = FakeJSONObject()
        payload.string("notificationType", notificationType)
        payload.string("subtype", subtype)
        payload.string("notificationUUID", notificationUUID)
        payload.string("version", "2.0")
        payload.integer("signedDate", signedDateMs)
        payload.raw(container.rawValue, app.text)
        return payload.bytes
    }

    /// The `signedPayload` Apple would POST: the transaction and renewal info signed first, then the notification.
    public func signedPayload(signer: JWSSigner) throws(CryptoError) -> String {
        let transactionJWS = try transaction.map { (transaction) throws(CryptoError) in
            try signer.sign(payload: transaction.json)
        }
        let renewalJWS = try renewal.map { (renewal) throws(CryptoError) in try signer.sign(payload: renewal.json) }
        let appTransactionJWS = try appTransactionId.map { (id) throws(CryptoError) in
            try signer.sign(
                payload: FakeAppTransaction(id: id, environment: environment, bundleId: bundleId)
                    .payloadJSON(bundleId: bundleId, signedDateMs: signedDateMs))
        }
        let payload = payloadJSON(
            signedTransactionInfo: transactionJWS, signedRenewalInfo: renewalJWS,
            signedAppTransactionInfo: container == .appData ? appTransactionJWS : nil)
        return try signer.sign(payload: payload)
    }
}
