/// What the fake App Store does with one receipt. A receipt for the fake is the standard base64 of this JSON
/// (see `FakeReceipt` for builders and `README.md` for the encoding).
public struct FakeReceiptScenario: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        /// A valid receipt of `env`: status 0 at its own endpoint, 21007 / 21008 at the other one.
        case valid
        /// Always answers `{"status": status}` (plus `environment` and the retry flag when given), HTTP 200.
        case status
        /// Answers HTTP `http_status` with a `body` of kind html (default), empty or json.
        case http
        /// Never answers: the connection is held (holding no thread) until the client gives up.
        case hang
    }

    public var scenario: Kind
    /// The key of this receipt's counters (`GET /admin/counters?receipt=<id>`); without one, the FNV-1a hash of the
    /// receipt data (`fnv-<16 hex digits>`).
    public var id: String?
    /// `Production` (default) or `Sandbox`: the environment a valid receipt belongs to.
    public var env: String?
    /// The `environment` a valid answer's body names, instead of the answering endpoint's (as Apple writes it):
    /// any text (a body that lies, or an unrecognized value), or `omit` for a body without the field.
    public var reportedEnv: String?
    public var bundleId: String?
    public var transactions: [FakeTransaction]?
    /// Adds this many generated transactions (huge receipts).
    public var generate: Int?
    /// Also lists the transactions in `latest_receipt_info` (as for auto-renewable subscriptions).
    public var subscription: Bool?
    public var status: Int?
    public var isRetryable: Bool?
    /// Spell the retry flag `is-retryable` (as Apple documents) instead of `is_retryable` (as Apple sends).
    public var hyphenatedRetryFlag: Bool?
    public var httpStatus: Int?
    /// `html` (default), `empty` or `json` for the `http` scenario.
    public var body: String?
    /// Extra latency for this receipt, on top of the server's.
    public var delayMs: Int?
    /// The first `fail_first` calls for this receipt (both environments counted) fail with `fail_status` (a
    /// verifyReceipt status, default 21005) or, when set, HTTP `fail_http_status` with an HTML body.
    public var failFirst: Int?
    public var failStatus: Int?
    public var failHttpStatus: Int?

    public init(
        scenario: Kind, id: String? = nil, env: String? = nil, bundleId: String? = nil,
        transactions: [FakeTransaction]? = nil, generate: Int? = nil, subscription: Bool? = nil, status: Int? = nil,
        isRetryable: Bool? = nil, hyphenatedRetryFlag: Bool? = nil, httpStatus: Int? = nil, body: String? = nil,
        delayMs: Int? = nil, failFirst: Int? = nil, failStatus: Int? = nil, failHttpStatus: Int? = nil,
        reportedEnv: String? = nil
    ) {
        self.scenario = scenario
        self.id = id
        self.env = env
        self.reportedEnv = reportedEnv
        self.bundleId = bundleId
        self.transactions = transactions
        self.generate = generate
        self.subscription = subscription
        self.status = status
        self.isRetryable = isRetryable
        self.hyphenatedRetryFlag = hyphenatedRetryFlag
        self.httpStatus = httpStatus
        self.body = body
        self.delayMs = delayMs
        self.failFirst = failFirst
        self.failStatus = failStatus
        self.failHttpStatus = failHttpStatus
    }

    enum CodingKeys: String, CodingKey {
        case scenario, id, env, transactions, generate, subscription, status, body
        case bundleId = "bundle_id"
        case isRetryable = "is_retryable"
        case hyphenatedRetryFlag = "hyphenated_retry_flag"
        case httpStatus = "http_status"
        case delayMs = "delay_ms"
        case failFirst = "fail_first"
        case failStatus = "fail_status"
        case failHttpStatus = "fail_http_status"
        case reportedEnv = "reported_env"
    }

    /// True when the receipt belongs to the sandbox.
    var isSandbox: Bool { env?.lowercased() == "sandbox" }

    /// The `environment` a valid answer from `endpoint`'s URL writes: nil to leave the field out.
    func reportedEnvironment(endpoint: String) -> String? {
        guard let reportedEnv else { return endpoint }
        return reportedEnv == "omit" ? nil : reportedEnv
    }
}

/// One purchase in a fake receipt.
public struct FakeTransaction: Codable, Sendable, Equatable {
    public var id: String
    public var product: String
    public var originalId: String?
    public var purchaseMs: Int64?
    public var expiresMs: Int64?
    /// Refunded at this time (`cancellation_date_ms`).
    public var refundedMs: Int64?
    public var cancellationReason: String?
    public var quantity: Int?

    public init(
        id: String, product: String, originalId: String? = nil, purchaseMs: Int64? = nil, expiresMs: Int64? = nil,
        refundedMs: Int64? = nil, cancellationReason: String? = nil, quantity: Int? = nil
    ) {
        self.id = id
        self.product = product
        self.originalId = originalId
        self.purchaseMs = purchaseMs
        self.expiresMs = expiresMs
        self.refundedMs = refundedMs
        self.cancellationReason = cancellationReason
        self.quantity = quantity
    }

    enum CodingKeys: String, CodingKey {
        case id, product, quantity
        case originalId = "original_id"
        case purchaseMs = "purchase_ms"
        case expiresMs = "expires_ms"
        case refundedMs = "refunded_ms"
        case cancellationReason = "cancellation_reason"
    }
}
