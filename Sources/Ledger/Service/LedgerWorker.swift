import Foundation
import LedgerRules
import Postgres
import ServiceRuntime
import ServiceSupport
import Synchronization

/// The ledger's one writer: takes batches from the buffer and applies each in one database transaction, retrying a
/// failed batch with backoff until it commits (nothing is skipped; readiness is false meanwhile). Runs on a thread of
/// its own; `stop` lets the batch in progress finish (or abandons its retries) and ends the loop. Where it stands
/// (preparing the schema, checking the binding, applying, refused, stopping) is one `LedgerWorkerLifecycle`.
final class LedgerWorker: Sendable {
    private let settings: LedgerSettings
    private let store: LedgerStore
    private let buffer: RecordBuffer
    private let metrics: LedgerMetrics
    private let logger: Logger
    /// Called after each commit with what it did (stores offsets in Kafka for lag, resumes fetching).
    private let afterBatch: @Sendable (BatchSummary) -> Void
    let database: DatabaseLink
    /// Partitions assigned while the database did not answer: read, checked and sought before anything is applied.
    private let starts: PartitionStarts
    private let lifecycle = Locked(LedgerWorkerLifecycle())
    /// Decodes the next batch while the worker applies the one before it (`DecodingAhead`).
    private let decoder = DispatchQueue(label: "ledger-decoder")
    private let loopEnded = Gate()
    private let lastGaugeRefreshNs = Atomic<UInt64>(0)
    private let lastWalletFiguresNs = Atomic<UInt64>(0)
    /// The Kafka cluster's id as the consumer reports it (nil: unknown).
    private let clusterId: @Sendable () -> String?

    init(
        settings: LedgerSettings, database: DatabaseLink, buffer: RecordBuffer, starts: PartitionStarts,
        metrics: LedgerMetrics, logger: Logger,
        clusterId: @escaping @Sendable () -> String? = { nil },
        afterBatch: @escaping @Sendable (BatchSummary) -> Void
    ) {
        self.clusterId = clusterId
        self.settings = settings
        self.store = LedgerStore(
            topics: settings.topics, policy: settings.ownershipPolicy, sandboxPolicy: settings.sandboxPolicy,
            clawback: settings.clawback)
        self.buffer = buffer
        self.metrics = metrics
        self.logger = logger
        self.afterBatch = afterBatch
        self.database = database
        self.starts = starts
    }

    /// Where the worker stands now.
    var phase: LedgerWorkerLifecycle.Phase { lifecycle.withLock { $0.phase } }

    var isStopping: Bool { lifecycle.withLock { $0.isStopping } }

    /// The worker's part of the service's health (nil: applying; the service checks the rest).
    var health: Health? { lifecycle.withLock { $0.health } }

    /// Stops applying anything, for good in this process: what it would apply might be skipped or misplaced.
    func refuse(_ reason: String) {
        handle(.refuse(reason))
    }

    func start() {
        handle(.start)
    }

    /// Ends the loop after the batch in progress (abandoning its retries), waiting up to `bound`. Returns false when
    /// it did not end in time.
    @discardableResult
    func drain(within bound: Duration) -> Bool {
        handle(.stop, waitingUpTo: bound)
    }

    /// Feeds `event` to the lifecycle and applies the actions it returns, outside the lock. Returns false when an
    /// action that waits (`waitForLoop`) did not finish within `bound`.
    @discardableResult
    private func handle(_ event: LedgerWorkerLifecycle.Event, waitingUpTo bound: Duration = .zero) -> Bool {
        let actions = lifecycle.withLock { $0.handle(event) }
        var finishedInTime = true
        for action in actions {
            switch action {
            case .startLoop:
                Thread.startNamed("ledger-worker") { [self] in
                    run()
                    handle(.loopEnded)
                }
            case .reportRefusal(let reason):
                logger.error("the ledger refuses to run against this database", ["reason": .string(reason)])
            case .wakeLoop:
                buffer.close()
            case .waitForLoop:
                finishedInTime = loopEnded.wait(within: bound)
            case .announceLoopEnded:
                loopEnded.open()
            }
        }
        return finishedInTime
    }

    private func run() {
        // The schema first: nothing is applied to tables of an older version.
        guard database.migrateWithRetry(until: { self.isStopping }) else { return }
        handle(.schemaReady)
        bindCluster()
        if lifecycle.withLock({ $0.mayApply }) { resolveStrandedClaims() }
        // The batch taken and decoded while the one before it was applied: applied next, never dropped while the
        // worker runs (its messages are out of the buffer).
        var ahead: DecodingAhead?
        while !isStopping {
            guard lifecycle.withLock({ $0.mayApply }) else {
                Thread.sleep(forTimeInterval: 0.25)
                continue
            }
            let batch = ahead?.take() ?? takeDecodedBatch()
            ahead = nil
            metrics.bufferedMessages.set(buffer.count)
            // Messages of a partition held for an offset gap, or awaiting its stored offset (fetched before it was
            // held or made to await), are never applied. Filtered before the awaiting partitions are resolved: a
            // resolved one is sought to its stored offset and its buffered messages discarded, so the store gets
            // its messages in contiguous offsets from there.
            let admitted = starts.withoutWithheld(batch)
            guard startsResolved(), lifecycle.withLock({ $0.mayApply }) else { continue }
            if !batch.isEmpty {
                ahead = DecodingAhead(on: decoder) { [self] in takeDecodedBatch() }
            }
            if !admitted.isEmpty { applyUntilCommitted(admitted) }
            refreshGaugesIfDue()
        }
    }

    /// Reads and applies the stored offsets of partitions assigned while the database did not answer, retrying
    /// with backoff until it did; nothing is applied before. Partitions whose watermarks are not known stay
    /// awaiting (checked again with backoff) while the others are applied. False when the worker stops first.
    private func startsResolved() -> Bool {
        var backoff = Backoff()
        while !isStopping {
            switch starts.resolveAwaiting(refuse: refuse, discardBuffered: { buffer.drop(Set($0)) }) {
            case .ready, .refused:
                return true
            case .databaseDown(let error):
                logger.error("cannot read the stored offsets of awaiting partitions; retrying", ["error": .string(error)])
                backoff.sleep()
            }
        }
        return false
    }

    /// The next batch from the buffer (waiting up to 250 ms for its first message), decoded.
    private func takeDecodedBatch() -> [DecodedRecord] {
        buffer.takeBatch(limit: settings.batchSize, timeout: .milliseconds(250)).map(store.decode)
    }

    /// Binds a new database to the Kafka cluster, or refuses one bound to another (unless `LEDGER_REBIND=cluster`).
    /// Nothing is applied before the check is done: until Kafka tells its cluster id and the database answers, it
    /// is retried with backoff (readiness says so), never skipped.
    private func bindCluster() {
        var backoff = Backoff()
        while !isStopping {
            guard let current = clusterId() else {
                logger.warning("the Kafka cluster's id is not known yet; checking the database's binding again")
                backoff.sleep()
                continue
            }
            do throws(PostgresError) {
                try database.withConnection { connection throws(PostgresError) in
                    try connection.transaction { session throws(PostgresError) in
                        try bind(to: current, in: session)
                    }
                }
                handle(.bindingChecked)
                return
            } catch {
                logger.error("cannot check the database's Kafka cluster binding; retrying", ["error": .string(error.description)])
                backoff.sleep()
            }
        }
    }

    /// Applies the claims parked on a token whose owner is known by now (`LedgerStore.resolveStrandedClaims`: after
    /// schema version 9 put tokens in one case), before any batch; retried with backoff while the database fails.
    private func resolveStrandedClaims() {
        var backoff = Backoff()
        while !isStopping {
            do throws(PostgresError) {
                let summary = try database.withConnection { connection throws(PostgresError) in
                    try store.resolveStrandedClaims(on: connection, nowMs: SystemTime.wallMilliseconds())
                }
                guard summary.resolvedClaims > 0 else { return }
                metrics.count(summary)
                logger.warning(
                    "claims parked on an app_account_token whose owner was known are applied",
                    ["claims": .int(summary.resolvedClaims), "refused_claims": .int(summary.refusedClaims)])
                return
            } catch {
                logger.error("cannot apply the claims parked on known tokens; retrying", ["error": .string(error.description)])
                backoff.sleep()
            }
        }
    }

    private func bind(to current: String, in session: PostgresSession) throws(PostgresError) {
        let stored = try KafkaBinding.storedCluster(in: session)
        switch KafkaBinding.cluster(stored: stored, current: current, rebind: settings.rebind) {
        case .bound: break
        case .bind(let id):
            try KafkaBinding.bindCluster(id, in: session, nowMs: SystemTime.wallMilliseconds())
            logger.info("the ledger database is bound to its Kafka cluster", ["cluster_id": .string(id)])
        case .rebind(let id):
            try KafkaBinding.bindCluster(id, in: session, nowMs: SystemTime.wallMilliseconds())
            logger.warning(
                "the ledger database is bound to another Kafka cluster now (LEDGER_REBIND=cluster)",
                ["from": .string(stored ?? ""), "to": .string(id)])
        case .refuse(let reason):
            refuse(reason)
        }
    }

    /// Applies `batch` in one transaction, retrying with backoff until it commits or the worker stops. A data
    /// exception (the database refusing a value) is retried message by message, and the message it refuses is
    /// dead-lettered with its offset. An integrity constraint violation (class 23) is too, once it repeats on the
    /// message alone: the first may be a concurrent writer's row committed first (the retry reads it), the same
    /// refusal again is the message's own, and retrying it forever would hold its partition. A serialization failure
    /// or deadlock (class 40) is always retried.
    private func applyUntilCommitted(_ batch: [DecodedRecord]) {
        var backoff = Backoff()
        var integrityViolations = 0
        while true {
            let started = SystemTime.monotonicNanoseconds()
            do {
                let summary = try database.withConnection { connection throws(PostgresError) in
                    try connection.transaction { session throws(PostgresError) in
                        try store.apply(decoded: batch, in: session, nowMs: SystemTime.wallMilliseconds())
                    }
                }
                committed(summary, batch.map(\.record), started: started)
                return
            } catch {
                metrics.databaseErrors.increment()
                if error.isDataException || error.isIntegrityConstraintViolation {
                    if batch.count > 1 {
                        logger.warning(
                            "the database refused a value in a batch; applying it one message at a time",
                            ["messages": .int(batch.count), "error": .string(error.description)])
                        for record in batch { applyUntilCommitted([record]) }
                        return
                    }
                    if error.isIntegrityConstraintViolation { integrityViolations += 1 }
                    if error.isDataException || integrityViolations > 1, let record = batch.first?.record,
                        deadLetterRefused(record, reason: "refused by the database: \(error.description)")
                    {
                        return
                    }
                }
                logger.error(
                    "cannot apply a batch; retrying",
                    [
                        "messages": .int(batch.count), "retry_in_ms": .int(Int(backoff.current / .milliseconds(1))),
                        "error": .string(error.description),
                    ])
                if isStopping {
                    logger.warning("stopping: the batch is abandoned and applied after the restart", ["messages": .int(batch.count)])
                    return
                }
                backoff.sleep()
            }
        }
    }

    private func deadLetterRefused(_ record: LedgerRecord, reason: String) -> Bool {
        let started = SystemTime.monotonicNanoseconds()
        do {
            let summary = try database.withConnection { connection throws(PostgresError) in
                try connection.transaction { session throws(PostgresError) in
                    try store.deadLetter(record, reason: reason, in: session, nowMs: SystemTime.wallMilliseconds())
                }
            }
            logger.warning(
                "message dead-lettered: the database refused it",
                ["topic": .string(record.topic), "partition": .int(Int(record.partition)), "offset": .int(Int(record.offset))])
            committed(summary, [record], started: started)
            return true
        } catch {
            return false
        }
    }

    private func committed(_ summary: BatchSummary, _ batch: [LedgerRecord], started: UInt64) {
        metrics.batchSeconds.observeSeconds(since: started)
        metrics.batches.increment()
        metrics.batchMessages.observe(Double(batch.count))
        let nowMs = SystemTime.wallMilliseconds()
        var results = 0
        for record in batch {
            if record.topic == settings.topics.results { results += 1 }
            if let timestamp = record.timestampMs { metrics.applyLatencySeconds.observe(Double(max(nowMs - timestamp, 0)) / 1_000) }
        }
        let applied = summary.applied
        let appliedResults = min(results, applied)
        metrics.appliedResults.increment(by: appliedResults)
        metrics.appliedEvents.increment(by: applied - appliedResults)
        metrics.count(summary)
        // A partition whose offsets jumped past its stored one: nothing of it from the jump on was applied; held.
        if !summary.offsetJumps.isEmpty { starts.offsetsJumped(summary.offsetJumps) }
        if summary.deadLettered > 0 {
            logger.warning("messages dead-lettered (see the dead_letters table)", ["count": .int(summary.deadLettered)])
        }
        if summary.refusedClaims > 0 || summary.transfers > 0 {
            logger.info(
                "ownership decisions", ["refused_claims": .int(summary.refusedClaims), "transfers": .int(summary.transfers)])
        }
        afterBatch(summary)
    }

    private func refreshGaugesIfDue() {
        let now = SystemTime.monotonicNanoseconds()
        guard now - lastGaugeRefreshNs.load(ordering: .relaxed) > 2_000_000_000 else { return }
        lastGaugeRefreshNs.store(now, ordering: .relaxed)
        if let backlog = try? database.withConnection({ connection throws(PostgresError) in
            try LedgerQueries.backlog(on: connection)
        }) {
            metrics.pendingClaims.set(Double(backlog.pendingClaims))
            metrics.deadLettersStored.set(Double(backlog.deadLetters))
        }
        // receipt-reconcile's tables may not exist (it never ran): nothing is read then.
        if let figures = try? database.withConnection({ connection throws(PostgresError) in
            try ReconcileFigures.read(on: connection)
        }) {
            metrics.reconcile.update(figures)
        }
        // Every 30 s only (again at the next refresh when the read failed): the unrecovered sum scans
        // `wallet_clawbacks` (about 80 ms per million take-backs) on this thread, between batches, and what is owed
        // moves only with refunds, reversals and repayments.
        guard now - lastWalletFiguresNs.load(ordering: .relaxed) > 30_000_000_000 else { return }
        if let figures = try? database.withConnection({ connection throws(PostgresError) in
            try WalletFigures.read(on: connection)
        }) {
            metrics.wallet.update(figures)
            lastWalletFiguresNs.store(now, ordering: .relaxed)
        }
    }
}

/// One batch taken from the buffer and decoded on another thread (`queue`) while the worker applies the batch before
/// it: decoding needs no database, so the two overlap on the machine's cores instead of taking turns.
private final class DecodingAhead: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let batch = Locked<[DecodedRecord]>([])

    init(on queue: DispatchQueue, _ take: @escaping @Sendable () -> [DecodedRecord]) {
        queue.async { [batch, done] in
            let taken = take()
            batch.withLock { $0 = taken }
            done.signal()
        }
    }

    /// The batch, once decoded (waits for it).
    func take() -> [DecodedRecord] {
        done.wait()
        return batch.withLock { $0 }
    }
}
