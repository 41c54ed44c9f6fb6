/// The ingest's endpoints. Matching is by path first, then method, so a known path with the wrong method is a 405.
enum IngestRoute: Sendable, Equatable {
    /// `POST /v1/receipts` (also `/v1/receipts/`), optionally `?wait_ms=N`.
    case submitReceipt
    /// `GET /v1/receipts/{submission_id}`: the id as it appears in the path (validated by the handler).
    case lookupReceipt(String)
    /// `POST /v1/apple/notifications`: App Store Server Notifications V2 (no API key).
    case appleNotification
    case health
    case readiness
    case metrics
    case notFound

    static let receiptsPrefix = "/v1/receipts/"
    static let notificationsPath = "/v1/apple/notifications"

    init(path: String) {
        switch path {
        case "/v1/receipts", Self.receiptsPrefix: self = .submitReceipt
        case Self.notificationsPath, Self.notificationsPath + "/": self = .appleNotification
        case "/healthz": self = .health
        case "/readyz": self = .readiness
        case "/metrics": self = .metrics
        default:
            if path.hasPrefix(Self.receiptsPrefix) {
                let id = path.dropFirst(Self.receiptsPrefix.count)
                self = id.contains("/") ? .notFound : .lookupReceipt(String(id))
            } else {
                self = .notFound
            }
        }
    }

    private static let post = ["POST"]
    private static let get = ["GET", "HEAD"]

    /// Methods the endpoint answers.
    var allowedMethods: [String] {
        switch self {
        case .submitReceipt, .appleNotification: Self.post
        case .lookupReceipt, .health, .readiness, .metrics: Self.get
        case .notFound: []
        }
    }

    /// Whether the route needs the API key (`INGEST_API_KEYS`).
    var needsAPIKey: Bool {
        switch self {
        case .submitReceipt, .lookupReceipt: true
        case .appleNotification, .health, .readiness, .metrics, .notFound: false
        }
    }

    /// The low-cardinality `route` label of request metrics.
    var metricLabel: String {
        switch self {
        case .submitReceipt: "/v1/receipts"
        case .lookupReceipt: "/v1/receipts/{submission_id}"
        case .appleNotification: Self.notificationsPath
        case .health: "/healthz"
        case .readiness: "/readyz"
        case .metrics: "/metrics"
        case .notFound: "other"
        }
    }
}
