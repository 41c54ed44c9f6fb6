import Foundation
import LedgerRules
import Postgres
import ServiceRuntime
import ServiceSupport
import Synchronization

/// The ledger's writer: takes batches from the buffer and applies each in one database transaction, retrying a
/// failed batch with backoff until it commits (nothing is skipped; readiness is false meanwhile). It applies in
/// `lanes` lanes, each a thread with a connection of its own, so one batch's rules run while another's statements
/// and commit run in PostgreSQL; a partition belongs to one lane at a time (`RecordBuffer`), so each partition is
/// still applied in offset order, and the lanes share the database as two instances do (fixed lock orders, a
/// deadlock or serialization failure retried). `stop` lets the batches in progress finish (or abandons their
/// retries) and ends the lanes. Where it stands (preparing the schema, checking the binding, applying, refused,
/// stopping) is one `LedgerWorkerLifecycle`.
final class LedgerWorker: Sendable {
    /// Batches applied at once. Two: the ledger's rules and PostgreSQL's work on a batch each take about half of it
    /// (docs/BENCHMARKS.md), and a third lane would only add lock waits and a connection on a 2-core machine.
    static let lanes = 2

    private let settings: LedgerSettings
    private let store: LedgerStore
    private let buffer: RecordBuffer
    private let metrics: LedgerMetrics
    private let logger: Logger
    /// Called after each commit with what it did (stores offsets in Kafka for lag, resumes fetching).
    private let afterBatch: @Sendable (BatchSummary) -> Void
    /// One connection per lane; the first is also the partition starts', the binding's and the gauges'.
    private let databases: [DatabaseLink]
    var database: DatabaseLink { databases[0] }
    /// Partitions assigned while the database did not answer: read, checked and sought before anything is applied.
    private let starts: PartitionStarts
    private let lifecycle = Locked(LedgerWorkerLifecycle())
    private let loopEnded = Gate()
    private let lastGaugeRefreshNs = Atomic<UInt64>(0)
    private let lastWalletFiguresNs = Atomic<UInt64>(0)
    /// The Kafka cluster's id as the consumer reports it (nil: unknown).
    private let clusterId: @Sendable () -> String?

    init(
        settings: LedgerSettings, databases: [DatabaseLink], buffer: RecordBuffer, starts: PartitionStarts,
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
        precondition(!databases.isEmpty && databases.count == buffer.lanes, "one database connection per lane")
        self.databases = databases
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
        let otherLanesEnded = databases.indices.dropFirst().map { lane in
            let ended = Gate()
            Thread.startNamed("ledger-worker-\(lane + 1)") { [self] in
                applyLoop(lane: lane)
                ended.open()
            }
            return ended
        }
        applyLoop(lane: 0)
        // The worker's loop ends when every lane did (each finishes or abandons its batch once stopping).
        for ended in otherLanesEnded { while !ended.wait(within: .seconds(60)) {} }
    }

    /// One lane's loop: takes a batch of the partitions it may take, applies it on the lane's connection, gives its
    /// partitions back. The first lane also resolves the partitions awaiting their stored offsets and refreshes the
    /// gauges. The other lanes apply meanwhile what is neither held nor awaiting: those partitions' starts were read
    /// and checked at their assignment, and the cluster's binding before any lane started; an awaiting partition's
    /// messages are never buffered, and what a batch took of it before it was sought is dropped (`withoutDropped`).
    private func applyLoop(lane: Int) {
        // Decodes the lane's next batch while the lane applies the one before it (`DecodingAhead`).
        let decoder = DispatchQueue(label: "ledger-decoder-\(lane + 1)")
        // The batch taken and decoded while the one before it was applied: applied next, never dropped while the
        // worker runs (its messages are out of the buffer).
        var ahead: DecodingAhead?
        while !isStopping {
            guard lifecycle.withLock({ $0.mayApply }) else {
                Thread.sleep(forTimeInterval: 0.25)
                continue
            }
            let batch = ahead?.take() ?? takeDecodedBatch(lane: lane)
            ahead = nil
            // Its partitions are the lane's until then, whether it was applied or not.
            defer { buffer.release(batch.records.map(\.record), lane: lane) }
            if lane == 0 { metrics.bufferedMessages.set(buffer.count) }
            // Messages of a partition held for an offset gap, or awaiting its stored offset (fetched before it was
            // held or made to await), are never applied; nor those of a partition dropped since the batch was taken
            // (revoked, or sought back to its stored offset by another lane's resolution). Filtered before the
            // awaiting partitions are resolved: a resolved one is sought to its stored offset and its buffered
            // messages discarded, so the store gets its messages in contiguous offsets from there.
            let admitted = starts.withoutWithheld(
                buffer.withoutDropped(batch.records, since: batch.dropsBefore) { $0.record.partitionKey })
            guard lane > 0 || startsResolved(), lifecycle.withLock({ $0.mayApply }) else { continue }
            if !batch.records.isEmpty {
                ahead = DecodingAhead(on: decoder) { [self] in takeDecodedBatch(lane: lane) }
            }
            if !admitted.isEmpty { applyUntilCommitted(admitted, on: databases[lane]) }
            if lane == 0 { refreshGaugesIfDue() }
        }
        if let ahead { buffer.release(ahead.take().records.map(\.record), lane: lane) }
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

    /// The lane's next batch from the buffer (waiting up to 250 ms for its first message), decoded.
    private func takeDecodedBatch(lane: Int) -> DecodedBatch {
        let taken = buffer.takeBatch(limit: settings.batchSize, timeout: .milliseconds(250), lane: lane)
        return DecodedBatch(records: taken.records.map(store.decode), dropsBefore: taken.dropsBefore)
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
    private func applyUntilCommitted(_ batch: [DecodedRecord], on database: DatabaseLink) {
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
                        for record in batch { applyUntilCommitted([record], on: database) }
                        return
                    }
                    if error.isIntegrityConstraintViolation { integrityViolations += 1 }
                    if error.isDataException || integrityViolations > 1, let record = batch.first?.record,
                        deadLetterRefused(record, reason: "refused by the database: \(error.description)", on: database)
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

    private func deadLetterRefused(_ record: LedgerRecord, reason: String, on database: DatabaseLink) -> Bool {
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
    private let batch = Locked(DecodedBatch(records: [], dropsBefore: 0))

    init(on queue: DispatchQueue, _ take: @escaping @Sendable () -> DecodedBatch) {
        queue.async { [batch, done] in
            let taken = take()
            batch.withLock { $0 = taken }
            done.signal()
        }
    }

    /// The batch, once decoded (waits for it).
    func take() -> DecodedBatch {
        done.wait()
        return batch.withLock { $0 }
    }
}

/// A batch taken from the buffer (`RecordBuffer.Taken`), decoded.
private struct DecodedBatch: Sendable {
    let records: [DecodedRecord]
    let dropsBefore: UInt64
}
