import Foundation

// The bodies of the App Store Server API's support and operations endpoints (receipt-admin), as Apple documents
// them. Answers are decoded leniently (every member optional where Apple may omit it); signed members are NOT
// verified here.

/// Look Up Order ID's answer: `status` 0 (a valid order id) with its signed transactions, or 1 (not an order id
/// Apple knows), HTTP 200 either way.
public struct OrderLookupResponse: Sendable, Equatable, Decodable {
    public var status: Int
    public var signedTransactions: [String]

    public init(status: Int, signedTransactions: [String]) {
        self.status = status
        self.signedTransactions = signedTransactions
    }

    enum CodingKeys: String, CodingKey { case status, signedTransactions }

    public init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: CodingKeys.self)
        status = try fields.decode(Int.self, forKey: .status)
        signedTransactions = try fields.decodeIfPresent([String].self, forKey: .signedTransactions) ?? []
    }
}

/// Get All Subscription Statuses' answer (`StatusResponse`).
public struct SubscriptionStatusesResponse: Sendable, Equatable, Decodable {
    /// One subscription group's latest transactions, one per original transaction.
    public struct Group: Sendable, Equatable, Decodable {
        public var subscriptionGroupIdentifier: String?
        public var lastTransactions: [LastTransaction]

        enum CodingKeys: String, CodingKey { case subscriptionGroupIdentifier, lastTransactions }

        public init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: CodingKeys.self)
            subscriptionGroupIdentifier = try fields.decodeIfPresent(String.self, forKey: .subscriptionGroupIdentifier)
            lastTransactions = try fields.decodeIfPresent([LastTransaction].self, forKey: .lastTransactions) ?? []
        }
    }

    /// `status`: 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked.
    public struct LastTransaction: Sendable, Equatable, Decodable {
        public var status: Int?
        public var originalTransactionId: String?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
    }

    public var environment: String?
    public var bundleId: String?
    public var data: [Group]

    enum CodingKeys: String, CodingKey { case environment, bundleId, data }

    public init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: CodingKeys.self)
        environment = try fields.decodeIfPresent(String.self, forKey: .environment)
        bundleId = try fields.decodeIfPresent(String.self, forKey: .bundleId)
        data = try fields.decodeIfPresent([Group].self, forKey: .data) ?? []
    }
}

/// Set App Account Token's body: the UUID, lower-cased as StoreKit writes it.
public struct AppAccountTokenRequest: Sendable, Equatable, Encodable {
    public var appAccountToken: String

    public init(appAccountToken: String) {
        self.appAccountToken = appAccountToken
    }
}

/// Extend a Subscription Renewal Date's body. Apple's limits: `extendByDays` 1...90, `extendReasonCode` 0
/// (undeclared), 1 (customer satisfaction), 2 (other), 3 (service issue or outage); `requestIdentifier` up to 128
/// characters.
public struct ExtendRenewalDateRequest: Sendable, Equatable, Encodable {
    public static let days = 1...90
    public static let reasonCodes = 0...3
    public static let maximumRequestIdentifierLength = 128

    public var extendByDays: Int
    public var extendReasonCode: Int
    public var requestIdentifier: String

    public init(extendByDays: Int, extendReasonCode: Int, requestIdentifier: String) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
    }
}

/// Extend a Subscription Renewal Date's answer.
public struct ExtendRenewalDateResponse: Sendable, Equatable, Decodable {
    public var originalTransactionId: String?
    public var webOrderLineItemId: String?
    public var success: Bool?
    /// The new renewal date (epoch milliseconds).
    public var effectiveDate: Int64?
}

/// Extend Subscription Renewal Dates for All Active Subscribers' body: `storefrontCountryCodes` (ISO 3166-1
/// alpha-3) limits it to those storefronts; nil means every storefront.
public struct MassExtendRenewalDateRequest: Sendable, Equatable, Encodable {
    public var extendByDays: Int
    public var extendReasonCode: Int
    public var requestIdentifier: String
    public var productId: String
    public var storefrontCountryCodes: [String]?

    public init(
        extendByDays: Int, extendReasonCode: Int, requestIdentifier: String, productId: String,
        storefrontCountryCodes: [String]?
    ) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
        self.productId = productId
        self.storefrontCountryCodes = storefrontCountryCodes
    }
}

/// The mass extension's answer: the request identifier to ask its status with.
public struct MassExtendRenewalDateResponse: Sendable, Equatable, Decodable {
    public var requestIdentifier: String?
}

/// Get Status of Subscription Renewal Date Extensions' answer.
public struct MassExtendRenewalDateStatusResponse: Sendable, Equatable, Decodable {
    public var requestIdentifier: String?
    public var complete: Bool?
    public var completeDate: Int64?
    public var succeededCount: Int64?
    public var failedCount: Int64?
}

/// Request a Test Notification's answer.
public struct SendTestNotificationResponse: Sendable, Equatable, Decodable {
    public var testNotificationToken: String?
}

/// Get Test Notification Status' answer (`CheckTestNotificationResponse`): the signed TEST notification and Apple's
/// attempts to send it, under `sendAttempts` (each a `SendAttemptItem`: `attemptDate`, `sendAttemptResult`), as
/// Apple documents it and its libraries name it. (Before round 5 this read `sendAttemptResults`, a name only the
/// project's fake sent, so `test-notification` never saw Apple's attempts: issue 41 item 6.)
public struct CheckTestNotificationResponse: Sendable, Equatable, Decodable {
    public var signedPayload: String?
    public var sendAttempts: [SendAttempt]

    public init(signedPayload: String?, sendAttempts: [SendAttempt]) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }

    enum CodingKeys: String, CodingKey { case signedPayload, sendAttempts }

    public init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: CodingKeys.self)
        signedPayload = try fields.decodeIfPresent(String.self, forKey: .signedPayload)
        sendAttempts = try fields.decodeIfPresent([SendAttempt].self, forKey: .sendAttempts) ?? []
    }
}

extension Encodable {
    /// The JSON body, members in a fixed order (what an audit or a dry run shows is what would be sent).
    public func serverAPIBody() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(self))
    }
}
