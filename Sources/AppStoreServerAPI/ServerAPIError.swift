import ReceiptModel

/// Why an App Store Server API call gave no usable answer, classified for the verifier (reference §2.5).
///
/// `message` says what happened and what to do; it never quotes tokens or signed data.
public struct ServerAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// 4040010 TransactionIdNotFound (or 4040005 OriginalTransactionIdNotFound): not in this environment; for Get
        /// App Transaction Info also 4040019 AppTransactionDoesNotExist (no app transaction for that customer).
        case notFound
        /// 4000006 InvalidTransactionId: the id is not a transaction id at all (bad input, permanent).
        case invalidTransactionId
        /// HTTP 401 even with a freshly signed token: the key is wrong or revoked, the bundle id is not the key's
        /// app, or (production only) the app has no release yet.
        case unauthorized
        /// HTTP 429, or the endpoint is held back after one (`heldBack`: no request was made).
        case rateLimited
        /// May succeed later: 5xx, 4040002/4040004/4040006 (…Retryable), 5000000/5000001, 4000005 (revision to
        /// restart), timeouts and connection failures, an unreadable 200 body, or no pacing slot before the deadline.
        case retryable
        /// Any other 4xx: our request is wrong (a bug or a bad setting); retrying cannot help.
        case invalidRequest
    }

    public var kind: Kind
    public var message: String
    /// The HTTP status of the last answer, when one arrived.
    public var httpStatus: Int?
    /// Apple's `errorCode`, when the body carried one.
    public var errorCode: Int?
    /// The environment asked.
    public var environment: AppStoreEnvironment
    /// With `.rateLimited`: milliseconds until the endpoint may be asked again.
    public var retryAfterMs: Int?
    /// With `.rateLimited`: true when the call was refused by our own hold-back (no request was sent).
    public var heldBack: Bool

    public init(
        _ kind: Kind, _ message: String, environment: AppStoreEnvironment, httpStatus: Int? = nil,
        errorCode: Int? = nil, retryAfterMs: Int? = nil, heldBack: Bool = false
    ) {
        self.kind = kind
        self.message = message
        self.environment = environment
        self.httpStatus = httpStatus
        self.errorCode = errorCode
        self.retryAfterMs = retryAfterMs
        self.heldBack = heldBack
    }

    public var description: String { message }

    /// The classification of an error answer (any status but 2xx and 401/429, which the client handles itself).
    static func kind(httpStatus: Int, errorCode: Int?) -> Kind {
        switch errorCode {
        case 4_040_010, 4_040_005, 4_040_019: return .notFound
        case 4_000_006: return .invalidTransactionId
        case 4_040_002, 4_040_004, 4_040_006, 5_000_000, 5_000_001, 4_000_005: return .retryable
        case 4_290_000: return .rateLimited
        default: break
        }
        switch httpStatus {
        case 500...599: return .retryable
        case 400...499: return .invalidRequest
        // A redirect or an informational status is not the API answering: a wrong URL (for example a proxy).
        default: return .invalidRequest
        }
    }
}
