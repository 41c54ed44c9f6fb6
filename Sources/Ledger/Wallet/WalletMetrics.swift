import LedgerRules
import ServiceSupport

/// The wallet's metrics: spend and grant requests by outcome, the spend batches, the units take-backs could not
/// take, and (gauges, read every 30 s) what is outstanding now per book.
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
    /// `ledger_wallet_debt_outstanding_units{book,item}`, `ledger_wallet_users_in_debt{book,item}`,
    /// `ledger_wallet_unrecovered_outstanding_units{book,item}` (`WalletFigures`), rendered from this reading when
    /// scraped. Every book and item read once is kept (at zero when nothing is outstanding in it any more), so a
    /// series falls to 0 rather than vanishing; items come from the product catalog, so the series stay few.
    private let outstanding = Locked<[WalletFigures.Key: WalletFigures.Outstanding]>([:])

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
        let outstanding = self.outstanding
        let perItem = "by book and item (items are those the product catalog credits)"
        registry.collect(
            "ledger_wallet_debt_outstanding_units",
            help: "Debt the wallets owe now (LEDGER_CLAWBACK=debt, not yet repaid), in units of the item, \(perItem)",
            kind: .gauge
        ) { Self.series(outstanding, \.debtUnits) }
        registry.collect(
            "ledger_wallet_users_in_debt",
            help: "Users with debt outstanding in the item (their spends of it are refused), \(perItem)", kind: .gauge
        ) { Self.series(outstanding, \.usersInDebt) }
        registry.collect(
            "ledger_wallet_unrecovered_outstanding_units",
            help: "Units recorded unrecovered (LEDGER_CLAWBACK=floor) and not given back by a reversal, in units of "
                + "the item, \(perItem)",
            kind: .gauge
        ) { Self.series(outstanding, \.unrecoveredUnits) }
    }

    /// Sets the outstanding gauges to `figures`: a book and item read before and absent from them now reads 0.
    func update(_ figures: WalletFigures) {
        outstanding.withLock { outstanding in
            for key in outstanding.keys { outstanding[key] = WalletFigures.Outstanding() }
            outstanding.merge(figures.outstanding) { $1 }
        }
    }

    private static func series(
        _ outstanding: Locked<[WalletFigures.Key: WalletFigures.Outstanding]>,
        _ figure: KeyPath<WalletFigures.Outstanding, Double>
    ) -> [(MetricLabels, Double)] {
        outstanding.withLock { $0 }.sorted { $0.key < $1.key }.map { key, value in
            ([("book", key.book.rawValue), ("item", key.item)], value[keyPath: figure])
        }
    }

    func count(_ operation: Operation, _ outcome: Outcome) {
        requests["\(operation.rawValue)/\(outcome.rawValue)"]?.increment()
    }
}
