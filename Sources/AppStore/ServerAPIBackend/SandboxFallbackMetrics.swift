import ServiceSupport

/// How often a lookup went on from production to the sandbox, and why: `appstore_server_api_sandbox_fallbacks_total
/// {reason}`. `not_found` is Apple's 4040010 (the purchase may be App Review's or TestFlight's); `production_unauthorized`
/// is a production 401 to a freshly signed token, which Apple answers until an app's first release: before it, the
/// count says App Review is buying; after it, any increase is a key problem (docs/OPERATIONS.md, "App Store Server
/// API key refused (401)").
struct SandboxFallbackMetrics: Sendable {
    enum Reason: String, CaseIterable {
        case notFound = "not_found"
        case productionUnauthorized = "production_unauthorized"
    }

    private let counters: [Reason: Counter]

    init(_ registry: MetricsRegistry) {
        var counters: [Reason: Counter] = [:]
        for reason in Reason.allCases {
            counters[reason] = registry.counter(
                "appstore_server_api_sandbox_fallbacks_total",
                help: "App Store Server API lookups that went on from production to the sandbox, by why: production's "
                    + "4040010 (not_found) or its 401 to a fresh token (production_unauthorized: an app without a "
                    + "release, else a key problem)",
                labels: [("reason", reason.rawValue)])
        }
        self.counters = counters
    }

    func record(_ reason: Reason) {
        counters[reason]?.increment()
    }
}
