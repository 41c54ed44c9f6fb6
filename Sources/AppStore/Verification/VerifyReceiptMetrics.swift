import ReceiptModel
import ServiceSupport

/// The verifyReceipt backend's instruments, looked up once: every call costs one atomic add and one histogram
/// observation. Labels are low-cardinality (environment, classification).
struct VerifyReceiptMetrics: Sendable {
    private let calls: [String: Counter]
    private let durations: [AppStoreEnvironment: Histogram]
    private let unusableTransactions: Counter
    private let disagreements: [String: Counter]

    static let outcomes = ["valid", "redirect", "retry", "rejected", "config_error"]

    init?(_ registry: MetricsRegistry?) {
        guard let registry else { return nil }
        var calls: [String: Counter] = [:]
        var durations: [AppStoreEnvironment: Histogram] = [:]
        for environment in AppStoreEnvironment.allCases {
            for outcome in Self.outcomes {
                calls[Self.key(environment, outcome)] = registry.counter(
                    "appstore_verifyreceipt_calls_total", help: "verifyReceipt HTTP calls by how Apple answered",
                    labels: [("environment", environment.rawValue), ("outcome", outcome)])
            }
            durations[environment] = registry.histogram(
                "appstore_verifyreceipt_call_duration_seconds", help: "verifyReceipt HTTP call duration",
                labels: [("environment", environment.rawValue)])
        }
        self.calls = calls
        self.durations = durations
        unusableTransactions = registry.counter(
            "appstore_verifyreceipt_unusable_transactions_total",
            help: "Transactions in valid verifyReceipt answers skipped for a missing id, product or purchase date")
        var disagreements: [String: Counter] = [:]
        let named = AppStoreEnvironment.allCases.map(\.rawValue) + ["unrecognized"]
        for endpoint in AppStoreEnvironment.allCases {
            for apple in named where apple != endpoint.rawValue {
                disagreements[Self.key(endpoint, apple)] = registry.counter(
                    "appstore_verifyreceipt_environment_disagreements_total",
                    help: "Valid verifyReceipt answers naming another environment than the endpoint that gave them",
                    labels: [("endpoint", endpoint.rawValue), ("apple", apple)])
            }
        }
        self.disagreements = disagreements
    }

    func recordEnvironmentDisagreement(endpoint: AppStoreEnvironment, apple: String) {
        disagreements[Self.key(endpoint, apple)]?.increment()
    }

    private static func key(_ environment: AppStoreEnvironment, _ outcome: String) -> String {
        environment.rawValue + "/" + outcome
    }

    func record(_ classification: StatusClassification, environment: AppStoreEnvironment, startedAt: UInt64) {
        let outcome: String
        switch classification {
        case .success: outcome = "valid"
        case .redirect: outcome = "redirect"
        case .retry: outcome = "retry"
        case .permanent: outcome = "rejected"
        case .configurationError: outcome = "config_error"
        }
        calls[Self.key(environment, outcome)]?.increment()
        durations[environment]?.observeSeconds(since: startedAt)
    }

    func recordUnusableTransactions(_ count: Int) {
        unusableTransactions.increment(by: count)
    }
}
