import ServiceSupport

/// The wallet's metrics: spend and grant requests by outcome, the spend batches, and the units take-backs could not
/// take.
struct WalletMetrics: Sendable {
    /// How a spend or grant request ended.
    enum Outcome: String, Sendable, CaseIterable {
        /// Applied now (200).
        case applied
        /// Refused: not enough units, or debt outstanding (409, stored: the key answers the same again).
        case insufficientBalance = "insufficient_balance"
        /// The stored answer of the same request again.
        case replayed
        /// The key was used for another request (422).
        case keyReused = "key_reused"
        /// The key's first request was still being applied (409).
        case keyInFlight = "key_in_flight"
        /// Bad input (400): nothing changed, nothing stored.
        case invalid
        /// A grant the balance cannot hold (422), nothing stored.
        case overflow
        /// The database did not answer, or the ledger is stopping (503): nothing stored, retry with the same key.
        case unavailable
    }

    enum Operation: String, Sendable, CaseIterable {
        case spend, grant
    }

    private let requests: [String: Counter]
    let batchSeconds: Histogram
    let batchRequests: Histogram
    let batchRetries: Counter
    let unrecoveredUnits: Counter
    let debtUnits: Counter

    init(registry: MetricsRegistry) {
        var requests: [String: Counter] = [:]
        for operation in Operation.allCases {
            for outcome in Outcome.allCases {
                requests["\(operation.rawValue)/\(outcome.rawValue)"] = registry.counter(
                    "ledger_wallet_requests_total", help: "Spend and grant requests by outcome",
                    labels: [("operation", operation.rawValue), ("outcome", outcome.rawValue)])
            }
        }
        self.requests = requests
        batchSeconds = registry.histogram(
            "ledger_wallet_batch_seconds", help: "Time to apply and commit one batch of spends and grants")
        batchRequests = registry.histogram(
            "ledger_wallet_batch_requests", help: "Spend and grant requests per committed batch",
            buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
        batchRetries = registry.counter(
            "ledger_wallet_batch_retries_total",
            help: "Spend batches applied again after a deadlock, a serialization failure or a concurrent first use of a key")
        unrecoveredUnits = registry.counter(
            "ledger_wallet_unrecovered_units_total",
            help: "Units refunds could not take back because they were spent (LEDGER_CLAWBACK=floor), recorded unrecovered")
        debtUnits = registry.counter(
            "ledger_wallet_debt_units_total",
            help: "Units refunds could not take back because they were spent (LEDGER_CLAWBACK=debt), recorded as debt")
    }

    func count(_ operation: Operation, _ outcome: Outcome) {
        requests["\(operation.rawValue)/\(outcome.rawValue)"]?.increment()
    }
}
