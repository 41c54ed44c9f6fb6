/// The ingest's endpoints. Matching is by path first, then method, so a known path with the wrong method is a 405.
/// New endpoints (issue 6's `GET /v1/receipts/{submission_id}`) are added here and in `IngestHandler.handle`.
enum IngestRoute: Sendable, Equatable {
    case submitReceipt
    case health
    case readiness
    case metrics
    case notFound

    init(path: String) {
        switch path {
        case "/v1/receipts", "/v1/receipts/": self = .submitReceipt
        case "/healthz": self = .health
        case "/readyz": self = .readiness
        case "/metrics": self = .metrics
        default: self = .notFound
        }
    }

    /// Methods the endpoint answers.
    var allowedMethods: [String] {
        switch self {
        case .submitReceipt: ["POST"]
        case .health, .readiness, .metrics: ["GET", "HEAD"]
        case .notFound: []
        }
    }

    /// The low-cardinality `route` label of request metrics.
    var metricLabel: String {
        switch self {
        case .submitReceipt: "/v1/receipts"
        case .health: "/healthz"
        case .readiness: "/readyz"
        case .metrics: "/metrics"
        case .notFound: "other"
        }
    }
}
