/// The ingest's endpoints. Matching is by path first, then method, so a known path with the wrong method is a 405.
enum IngestRoute: Sendable, Equatable {
    /// `POST /v1/receipts` (also `/v1/receipts/`), optionally `?wait_ms=N`.
    case submitReceipt
    /// `GET /v1/receipts/{submission_id}`: the id as it appears in the path (validated by the handler).
    case lookupReceipt(String)
    case health
    case readiness
    case metrics
    case notFound

    static let receiptsPrefix = "/v1/receipts/"

    init(path: String) {
        switch path {
        case "/v1/receipts", Self.receiptsPrefix: self = .submitReceipt
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

    /// Methods the endpoint answers.
    var allowedMethods: [String] {
        switch self {
        case .submitReceipt: ["POST"]
        case .lookupReceipt, .health, .readiness, .metrics: ["GET", "HEAD"]
        case .notFound: []
        }
    }

    /// The low-cardinality `route` label of request metrics.
    var metricLabel: String {
        switch self {
        case .submitReceipt: "/v1/receipts"
        case .lookupReceipt: "/v1/receipts/{submission_id}"
        case .health: "/healthz"
        case .readiness: "/readyz"
        case .metrics: "/metrics"
        case .notFound: "other"
        }
    }
}
