import LedgerRules
import ServiceSupport

/// The ledger's own metrics (the consumer adds `kafka_consumer_lag` and friends to the same registry).
struct LedgerMetrics: Sendable {
    let registry: MetricsRegistry
    let appliedResults: Counter
    let appliedEvents: Counter
    let alreadyApplied: Counter
    let duplicateEvents: Counter
    let refusedClaims: Counter
    let transfers: Counter
    let deadLetters: Counter
    let resolvedClaims: Counter
    let rederivedKeys: Counter
    let sandboxCredits: Counter
    let declinedClaims: Counter
    let staleEvents: Counter
    let upgrades: Counter
    let batches: Counter
    let databaseErrors: Counter
    let batchSeconds: Histogram
    let applyLatencySeconds: Histogram
    let batchMessages: Histogram
    let pendingClaims: Gauge
    let deadLettersStored: Gauge
    let databaseUp: Gauge
    let bufferedMessages: Gauge
    /// Partitions held for an offset gap, and the offsets accepted as lost (`PartitionStarts`).
    let offsetGaps: PartitionStarts.GapMetrics
    let reconcile: ReconcileMetrics
    let wallet: WalletMetrics
    /// `PUT /v1/users/{user_id}/app-account-token`, by outcome.
    let tokensDeclared: Counter
    let tokensAlreadyDeclared: Counter
    let tokenDeclarationConflicts: Counter

    init(registry: MetricsRegistry, sandboxPolicy: SandboxPolicy = .separate) {
        self.registry = registry
        appliedResults = registry.counter(
            "ledger_messages_applied_total", help: "Messages applied (including dead-lettered ones)",
            labels: [("topic", "results")])
        appliedEvents = registry.counter(
            "ledger_messages_applied_total", help: "Messages applied (including dead-lettered ones)",
            labels: [("topic", "events")])
        alreadyApplied = registry.counter(
            "ledger_messages_already_applied_total",
            help: "Messages skipped because their offset was already applied (redeliveries)")
        duplicateEvents = registry.counter(
            "ledger_duplicate_events_total", help: "Events skipped because their event_id was applied before")
        refusedClaims = registry.counter(
            "ledger_refused_claims_total", help: "Claims of a purchase refused (another owner, or refunded first)")
        transfers = registry.counter(
            "ledger_transfers_total", help: "Entitlements moved to a later claimant (LEDGER_OWNERSHIP_POLICY=transfer)")
        deadLetters = registry.counter(
            "ledger_dead_letters_total", help: "Messages (or parts) recorded in dead_letters instead of applied")
        resolvedClaims = registry.counter(
            "ledger_resolved_claims_total", help: "Claims that waited for their owner and were applied")
        rederivedKeys = registry.counter(
            "ledger_credit_key_rederived_total",
            help: "Transactions whose credit_key differed from the key the ledger derives from their ids (old keys)")
        sandboxCredits = registry.counter(
            "ledger_sandbox_credits_total", help: "Sandbox purchases credited (App Review, TestFlight: nobody paid)",
            labels: [("policy", sandboxPolicy.rawValue)])
        declinedClaims = registry.counter(
            "ledger_declined_claims_total", help: "Valid claims granting nothing by rule (family-shared items)")
        staleEvents = registry.counter(
            "ledger_stale_events_total",
            help: "Events signed before the last one of their order (money, or status) applied to their purchase (recorded, nothing moved)")
        upgrades = registry.counter(
            "ledger_upgrades_total", help: "Subscription periods replaced by an upgrade (unused share taken back)")
        batches = registry.counter("ledger_batches_total", help: "Database transactions committed with messages")
        databaseErrors = registry.counter(
            "ledger_database_errors_total", help: "Batches that failed on a database error and were retried")
        batchSeconds = registry.histogram(
            "ledger_batch_seconds", help: "Time to apply and commit one batch")
        applyLatencySeconds = registry.histogram(
            "ledger_apply_latency_seconds", help: "From a message's Kafka timestamp to the commit that applied it")
        batchMessages = registry.histogram(
            "ledger_batch_messages", help: "Messages per committed batch",
            buckets: [1, 10, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000])
        pendingClaims = registry.gauge(
            "ledger_pending_owner_claims", help: "Credit claims waiting for a result to name their owner")
        deadLettersStored = registry.gauge("ledger_dead_letters", help: "Rows in the dead_letters table")
        databaseUp = registry.gauge("ledger_database_up", help: "1 when the last database statement succeeded")
        bufferedMessages = registry.gauge(
            "ledger_buffered_messages", help: "Messages fetched from Kafka and not yet applied")
        offsetGaps = PartitionStarts.GapMetrics(
            heldPartitions: registry.gauge(
                "ledger_offset_gap_partitions",
                help: "Assigned partitions not consumed: their stored offset is below the partition's first retained "
                    + "offset (messages deleted before the ledger applied them), until LEDGER_ACCEPT_OFFSET_GAP names it"),
            acceptedOffsets: registry.counter(
                "ledger_offset_gap_accepted_offsets_total",
                help: "Offsets never applied because an operator accepted their gap (LEDGER_ACCEPT_OFFSET_GAP)"))
        reconcile = ReconcileMetrics(registry: registry)
        wallet = WalletMetrics(registry: registry)
        let declarations = "ledger_token_declarations_total"
        let declarationsHelp = "Declarations of an app_account_token's user (PUT /v1/users/{user_id}/app-account-token), by outcome"
        tokensDeclared = registry.counter(declarations, help: declarationsHelp, labels: [("outcome", "declared")])
        tokensAlreadyDeclared = registry.counter(
            declarations, help: declarationsHelp, labels: [("outcome", "already_declared")])
        tokenDeclarationConflicts = registry.counter(
            declarations, help: declarationsHelp, labels: [("outcome", "conflict")])
    }

    func tokenDeclarations(_ decision: OwnerRules.Declaration) -> Counter {
        switch decision {
        case .declared: tokensDeclared
        case .alreadyDeclared: tokensAlreadyDeclared
        case .conflict: tokenDeclarationConflicts
        }
    }

    /// Counts what a committed transaction decided (a batch's, or the stranded claims' resolution): one place that
    /// maps every figure of `BatchSummary` to its counter, so no caller forgets one. Messages applied are counted by
    /// the caller, which knows their topics.
    func count(_ summary: BatchSummary) {
        alreadyApplied.increment(by: summary.alreadyApplied)
        duplicateEvents.increment(by: summary.duplicateEvents)
        refusedClaims.increment(by: summary.refusedClaims)
        transfers.increment(by: summary.transfers)
        deadLetters.increment(by: summary.deadLettered)
        resolvedClaims.increment(by: summary.resolvedClaims)
        rederivedKeys.increment(by: summary.rederivedKeys)
        sandboxCredits.increment(by: summary.sandboxCredits)
        declinedClaims.increment(by: summary.declinedClaims)
        staleEvents.increment(by: summary.staleEvents)
        upgrades.increment(by: summary.upgrades)
        wallet.unrecoveredUnits.increment(by: summary.unrecoveredUnits)
        wallet.debtUnits.increment(by: summary.debtUnits)
    }
}
