import ReceiptModel
import ServiceSupport

/// The App Store Server API client's instruments, looked up once (labels: endpoint, environment, outcome; all
/// low-cardinality).
struct ServerAPIMetrics: Sendable {
    static let outcomes = [
        "ok", "not_found", "invalid_transaction_id", "unauthorized", "rate_limited", "retryable", "invalid_request",
    ]
    static let refusals = ["held_back", "deadline"]

    private let calls: [String: Counter]
    private let refused: [String: Counter]
    private let paced: [String: Counter]
    private let durations: [String: Histogram]

    init?(_ registry: MetricsRegistry?, pacer: ServerAPIPacer) {
        guard let registry else { return nil }
        var calls: [String: Counter] = [:]
        var refused: [String: Counter] = [:]
        var paced: [String: Counter] = [:]
        var durations: [String: Histogram] = [:]
        for endpoint in ServerAPIEndpoint.allCases {
            for environment in AppStoreEnvironment.allCases {
                let labels = [("endpoint", endpoint.rawValue), ("environment", environment.rawValue)]
                let key = Self.key(endpoint, environment)
                for outcome in Self.outcomes {
                    calls[key + "/" + outcome] = registry.counter(
                        "appstore_server_api_calls_total", help: "App Store Server API HTTP calls by how Apple answered",
                        labels: labels + [("outcome", outcome)])
                }
                for reason in Self.refusals {
                    refused[key + "/" + reason] = registry.counter(
                        "appstore_server_api_refused_total",
                        help: "App Store Server API calls answered retryable without a request (429 hold-back, or "
                            + "no pacing slot before the deadline)",
                        labels: labels + [("reason", reason)])
                }
                paced[key] = registry.counter(
                    "appstore_server_api_paced_total",
                    help: "App Store Server API calls that waited for a pacing token (APPLE_SERVER_API_MAX_RPS)",
                    labels: labels)
                durations[key] = registry.histogram(
                    "appstore_server_api_call_duration_seconds", help: "App Store Server API HTTP call duration",
                    labels: labels)
            }
        }
        self.calls = calls
        self.refused = refused
        self.paced = paced
        self.durations = durations
        registry.collect(
            "appstore_server_api_hold_seconds",
            help: "Seconds left of the hold-back of an endpoint after Apple answered 429", kind: .gauge
        ) {
            pacer.currentHolds.sorted { $0.key.description < $1.key.description }.map {
                ([("endpoint", $0.key.endpoint.rawValue), ("environment", $0.key.environment.rawValue)],
                 Double($0.value) / 1000)
            }
        }
    }

    private static func key(_ endpoint: ServerAPIEndpoint, _ environment: AppStoreEnvironment) -> String {
        endpoint.rawValue + "/" + environment.rawValue
    }

    static func outcome(_ result: Result<Void, ServerAPIError>) -> String {
        switch result {
        case .success: "ok"
        case .failure(let error):
            switch error.kind {
            case .notFound: "not_found"
            case .invalidTransactionId: "invalid_transaction_id"
            case .unauthorized: "unauthorized"
            case .rateLimited: "rate_limited"
            case .retryable: "retryable"
            case .invalidRequest: "invalid_request"
            }
        }
    }

    func recordCall(
        _ key: ServerAPIPacing.Key, outcome: String, startedAt: UInt64
    ) {
        let base = Self.key(key.endpoint, key.environment)
        calls[base + "/" + outcome]?.increment()
        durations[base]?.observeSeconds(since: startedAt)
    }

    func recordRefusal(_ key: ServerAPIPacing.Key, _ refusal: ServerAPIPacer.Refusal) {
        let reason: String
        switch refusal {
        case .heldBack: reason = "held_back"
        case .tooLate: reason = "deadline"
        }
        refused[Self.key(key.endpoint, key.environment) + "/" + reason]?.increment()
    }

    func recordPaced(_ key: ServerAPIPacing.Key) {
        paced[Self.key(key.endpoint, key.environment)]?.increment()
    }
}
