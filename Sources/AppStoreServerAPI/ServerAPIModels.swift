/// Get Transaction Info's answer: `{"signedTransactionInfo": "<JWS>"}`. Verify the JWS before using it.
public struct TransactionInfoResponse: Sendable, Equatable, Decodable {
    public var signedTransactionInfo: String

    public init(signedTransactionInfo: String) {
        self.signedTransactionInfo = signedTransactionInfo
    }
}

/// One page of Get Transaction History v2 (`HistoryResponse`). Only `signedTransactions` is signed: `bundleId`
/// and `environment` here are informational; use the verified transactions' own fields.
public struct HistoryResponse: Sendable, Equatable, Decodable {
    /// Pass it back (with the same query) for the next page.
    public var revision: String?
    public var hasMore: Bool
    public var bundleId: String?
    public var appAppleId: Int64?
    public var environment: String?
    /// Up to 20 signed transactions (JWS).
    public var signedTransactions: [String]

    public init(
        revision: String?, hasMore: Bool, bundleId: String? = nil, appAppleId: Int64? = nil,
        environment: String? = nil, signedTransactions: [String]
    ) {
        self.revision = revision
        self.hasMore = hasMore
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.signedTransactions = signedTransactions
    }

    enum CodingKeys: String, CodingKey {
        case revision, hasMore, bundleId, appAppleId, environment, signedTransactions
    }

    /// `signedTransactions` is required: a 200 whose body lacks it (a proxy's, or a changed API) is not an empty
    /// history, which would reject the receipt as `transaction_not_found`, but an unreadable answer (retryable).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        revision = try c.decodeIfPresent(String.self, forKey: .revision)
        hasMore = try c.decodeIfPresent(Bool.self, forKey: .hasMore) ?? false
        bundleId = try c.decodeIfPresent(String.self, forKey: .bundleId)
        appAppleId = try? c.decodeIfPresent(Int64.self, forKey: .appAppleId)
        environment = try c.decodeIfPresent(String.self, forKey: .environment)
        signedTransactions = try c.decode([String].self, forKey: .signedTransactions)
    }
}

/// The query of Get Transaction History v2 (every field optional; Apple repeats it with each `revision`).
public struct TransactionHistoryQuery: Sendable, Equatable {
    public enum Sort: String, Sendable {
        /// Apple's default: oldest modification first.
        case ascending = "ASCENDING"
        /// Most recently modified first.
        case descending = "DESCENDING"
    }

    /// Epoch ms: purchases at or after.
    public var startDate: Int64?
    /// Epoch ms: purchases before.
    public var endDate: Int64?
    public var productIds: [String]
    /// `AUTO_RENEWABLE`, `NON_RENEWABLE`, `CONSUMABLE`, `NON_CONSUMABLE`.
    public var productTypes: [String]
    public var sort: Sort?
    public var subscriptionGroupIdentifiers: [String]
    /// `PURCHASED` or `FAMILY_SHARED`.
    public var inAppOwnershipType: String?
    public var revoked: Bool?

    public init(
        startDate: Int64? = nil, endDate: Int64? = nil, productIds: [String] = [], productTypes: [String] = [],
        sort: Sort? = nil, subscriptionGroupIdentifiers: [String] = [], inAppOwnershipType: String? = nil,
        revoked: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.productIds = productIds
        self.productTypes = productTypes
        self.sort = sort
        self.subscriptionGroupIdentifiers = subscriptionGroupIdentifiers
        self.inAppOwnershipType = inAppOwnershipType
        self.revoked = revoked
    }

    /// `name=value` pairs, `revision` first when given, percent-encoded.
    func queryString(revision: String?) -> String {
        var pairs: [(String, String)] = []
        if let revision { pairs.append(("revision", revision)) }
        if let startDate { pairs.append(("startDate", String(startDate))) }
        if let endDate { pairs.append(("endDate", String(endDate))) }
        pairs += productIds.map { ("productId", $0) }
        pairs += productTypes.map { ("productType", $0) }
        if let sort { pairs.append(("sort", sort.rawValue)) }
        pairs += subscriptionGroupIdentifiers.map { ("subscriptionGroupIdentifier", $0) }
        if let inAppOwnershipType { pairs.append(("inAppOwnershipType", inAppOwnershipType)) }
        if let revoked { pairs.append(("revoked", revoked ? "true" : "false")) }
        return pairs.map { URLComponent.encode($0.0) + "=" + URLComponent.encode($0.1) }.joined(separator: "&")
    }
}

/// The body of Get Notification History. `transactionId` and `notificationType` exclude each other (Apple's
/// rule); the window is at most 180 days back in production, 30 in the sandbox.
public struct NotificationHistoryRequest: Sendable, Equatable, Encodable {
    /// Epoch ms, inclusive.
    public var startDate: Int64
    /// Epoch ms, exclusive.
    public var endDate: Int64
    public var notificationType: String?
    public var notificationSubtype: String?
    /// Only notifications Apple could not deliver.
    public var onlyFailures: Bool?
    public var transactionId: String?

    public init(
        startDate: Int64, endDate: Int64, notificationType: String? = nil, notificationSubtype: String? = nil,
        onlyFailures: Bool? = nil, transactionId: String? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.onlyFailures = onlyFailures
        self.transactionId = transactionId
    }
}

/// One page of Get Notification History (up to 20 entries).
public struct NotificationHistoryResponse: Sendable, Equatable, Decodable {
    public var notificationHistory: [NotificationHistoryItem]
    public var hasMore: Bool
    /// Pass it back (with the same body) for the next page.
    public var paginationToken: String?

    public init(notificationHistory: [NotificationHistoryItem], hasMore: Bool, paginationToken: String?) {
        self.notificationHistory = notificationHistory
        self.hasMore = hasMore
        self.paginationToken = paginationToken
    }

    enum CodingKeys: String, CodingKey {
        case notificationHistory, hasMore, paginationToken
    }

    /// `notificationHistory` is required: a 200 whose body lacks it is an unreadable answer (retried), not an empty
    /// last page that would end a backfill early.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        notificationHistory = try c.decode([NotificationHistoryItem].self, forKey: .notificationHistory)
        hasMore = try c.decodeIfPresent(Bool.self, forKey: .hasMore) ?? false
        paginationToken = try c.decodeIfPresent(String.self, forKey: .paginationToken)
    }
}

/// A notification Apple sent (or tried to) (`NotificationHistoryResponseItem`): its `signedPayload` (verify it like
/// any notification) and how each send attempt went, Apple's `sendAttempts`.
public struct NotificationHistoryItem: Sendable, Equatable, Decodable {
    public var signedPayload: String
    public var sendAttempts: [SendAttempt]

    public init(signedPayload: String, sendAttempts: [SendAttempt] = []) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }

    enum CodingKeys: String, CodingKey {
        case signedPayload, sendAttempts
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        signedPayload = try c.decode(String.self, forKey: .signedPayload)
        sendAttempts = (try? c.decodeIfPresent([SendAttempt].self, forKey: .sendAttempts)) ?? []
    }
}

/// One delivery attempt (`SendAttemptItem`): when, and Apple's result (`SUCCESS`, `TIMED_OUT`, `TLS_ISSUE`, `CIRCULAR_REDIRECT`,
/// `NO_RESPONSE`, `SOCKET_ISSUE`, `UNSUPPORTED_CHARSET`, `INVALID_RESPONSE`, `PREMATURE_CLOSE`,
/// `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, `OTHER`).
public struct SendAttempt: Sendable, Equatable, Decodable {
    /// Epoch ms.
    public var attemptDate: Int64?
    public var sendAttemptResult: String?

    public init(attemptDate: Int64?, sendAttemptResult: String?) {
        self.attemptDate = attemptDate
        self.sendAttemptResult = sendAttemptResult
    }

    enum CodingKeys: String, CodingKey {
        case attemptDate, sendAttemptResult
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        attemptDate = try? c.decodeIfPresent(Int64.self, forKey: .attemptDate)
        sendAttemptResult = try? c.decodeIfPresent(String.self, forKey: .sendAttemptResult)
    }
}

/// Apple's error body: `{"errorCode": 4040010, "errorMessage": "..."}`.
struct ServerAPIErrorBody: Decodable {
    var errorCode: Int?
    var errorMessage: String?
}

/// Percent-encoding of URL path segments and query components (RFC 3986 unreserved characters kept).
enum URLComponent {
    static func encode(_ text: String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                output += "%"
                output.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                output.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 15)]))
            }
        }
        return output
    }
}

/// The answer of an endpoint that returns no body (Send Consumption Information, Set App Account Token): any 2xx.
public struct ServerAPINoContent: Decodable, Sendable, Equatable {
    public init() {}
}
