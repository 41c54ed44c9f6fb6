import Kafka
import Postgres
import ServiceRuntime
import ServiceSupport
import Synchronization

/// Where the ledger's assigned partitions start: at the next offsets stored in the database, the truth (the group's
/// offsets in Kafka follow it for lag only), checked against each partition's end and start (`checkTopics`).
///
/// A partition whose stored offset lies below its first retained offset (`KafkaBinding.OffsetGap`: messages deleted
/// before this database applied them, e.g. a restored backup older than the topics' retention) is held: assigned
/// but paused, none of its messages buffered or applied, the service not ready and `ledger_offset_gap_partitions`
/// counting it, until `LEDGER_ACCEPT_OFFSET_GAP` names that gap (its stored offset moves to the low watermark, the
/// gap is recorded in `accepted_offset_gaps`). The other partitions go on. librdkafka alone would skip the gap
/// without a word (`auto.offset.reset=earliest`).
///
/// A partition whose watermarks its leader does not give in time is not judged, so not started either: it awaits
/// like one whose stored offset was not read, and the worker checks it again with backoff until it is judged.
/// And a gap that opens later (fetching paused for longer than the topics' retention, librdkafka resetting the
/// position to the first retained offset) or that the check missed is caught where messages are applied: the
/// store applies a partition's messages only in contiguous offsets from its stored next offset
/// (`KafkaBinding.offsetWalk`), and a jump is held here exactly like a gap found at assignment (`offsetsJumped`).
/// `auto.offset.reset` stays `earliest`: with `error` librdkafka would stop the partition with an error event that
/// names no gap and never restarts it, while the reset's first message tells the jump exactly (stored offset,
/// first offset handed out), in the transaction that would apply it.
///
/// On assignment the consumer's poll thread asks the database once. When it does not answer, the partitions are
/// assigned at their beginning, paused and recorded as awaiting (`AwaitingStarts`); the worker reads their offsets
/// before it applies anything, retrying with backoff while the database is down, then moves them there (`seek`) and
/// resumes fetching. So the poll thread never waits for the database beyond one attempt, and the consumer keeps
/// serving the group (heartbeats, `max.poll.interval.ms`, statistics, rebalances) through a database outage.
///
/// Why the beginning is a safe place to hold an awaiting partition: the store skips every message below a
/// partition's stored offset inside the transaction that would apply it, so a message fetched before the pause took
/// effect costs a read, never a credit; and none of an awaiting partition's messages is applied before its offsets
/// were read and checked.
final class PartitionStarts: Sendable {
    enum Resolution: Sendable, Equatable {
        /// Nothing awaits (any more): the worker may apply.
        case ready
        /// The database did not answer: retry later, apply nothing meanwhile.
        case databaseDown(String)
        /// A partition's stored offset lies beyond its end: the worker was told to refuse.
        case refused
    }

    private let database: DatabaseLink
    private let rebind: Set<KafkaBinding.Rebind>
    /// `LEDGER_ACCEPT_OFFSET_GAP`: the gaps the operator accepted, by partition, with the stored offset each names.
    private let acceptedGaps: [TopicPartition: Int64]
    private let gapMetrics: GapMetrics?
    private let logger: Logger
    private let awaiting = Locked(AwaitingStarts())
    /// Assigned partitions held for a gap nobody accepted; forgotten when revoked.
    private let held = Locked<[TopicPartition: KafkaBinding.OffsetGap]>([:])
    /// The gaps found for the assignment in progress: held from the moment the partitions are assigned
    /// (`assigned`), so a partition librdkafka did not assign after all is never held.
    private let gapsInAssignment = Locked<[KafkaBinding.OffsetGap]>([])
    /// `held` is not empty: the per-message check (`admits`) takes no lock otherwise.
    private let anyHeld = Atomic<Bool>(false)
    /// `awaiting` is not empty (set under its lock): the same, for awaiting partitions.
    private let anyAwaiting = Atomic<Bool>(false)
    /// The partitions assigned now (under `held`'s lock): a jump the worker reports after a revocation holds nothing.
    private let owned = Locked<Set<TopicPartition>>([])
    /// Awaiting partitions whose watermarks were not known at their last check, for readiness.
    private let unjudged = Locked<Set<TopicPartition>>([])
    /// When awaiting partitions were left unjudged: the awaiting snapshot then, and when to check it again (the
    /// worker does not ask their leaders at every batch).
    private let recheck = Locked<Recheck?>(nil)
    /// The partitions of the assignment in progress whose offsets the database did not give: awaiting from the
    /// moment they are assigned (`assigned`), not before, so the worker never seeks a partition not assigned yet.
    private let unreadInAssignment = Locked<[TopicPartition]>([])
    /// The service's consumer link: the consumer, once attached, and whether the waterline holds fetching paused
    /// (then the link resumes every partition itself once under its low water mark, and a resolved partition stays
    /// paused until then).
    private let link: ConsumerLink

    private struct Recheck {
        var snapshot: [TopicPartition: UInt64]
        var dueNs: UInt64
        var backoff: Backoff
    }

    /// How long the worker waits for a partition's watermarks when it checks an unjudged partition again (shorter
    /// than at assignment: it applies the other partitions' messages meanwhile).
    static let recheckTimeout: Duration = .seconds(2)

    /// The gauge of held partitions and the counter of accepted offsets.
    struct GapMetrics: Sendable {
        let heldPartitions: Gauge
        let acceptedOffsets: Counter
    }

    init(
        database: DatabaseLink, rebind: Set<KafkaBinding.Rebind>, acceptedGaps: [TopicPartition: Int64] = [:],
        link: ConsumerLink, gapMetrics: GapMetrics? = nil, logger: Logger
    ) {
        self.database = database
        self.rebind = rebind
        self.acceptedGaps = acceptedGaps
        self.link = link
        self.gapMetrics = gapMetrics
        self.logger = logger
    }

    /// How many assigned partitions wait for their stored offsets (or to be judged against them).
    var awaitingCount: Int { awaiting.withLock { $0.count } }

    /// Why the service is not ready while partitions await because their watermarks are not known (nil: none).
    var unjudgedReadiness: String? {
        let partitions = unjudged.withLock { $0 }.sorted().map(\.description)
        guard !partitions.isEmpty else { return nil }
        return "the first retained offset of \(partitions.joined(separator: ", ")) is not known (their leader did not "
            + "answer): not consumed until it is checked against the stored offset (retrying)"
    }

    /// Why the service is not ready while partitions are held for a gap (nil: none is).
    var gapReadiness: String? {
        let gaps = held.withLock { Array($0.values) }.sorted()
        return gaps.isEmpty ? nil : KafkaBinding.gapRefusal(gaps)
    }

    /// Whether a fetched message of `partition` may be buffered: never one of a held or an awaiting partition,
    /// which is paused again (the waterline's resume takes in every assigned partition). An awaiting partition is
    /// paused under the lock the worker resolves it under, so a resolution never finds it paused again. The
    /// consumer's poll thread, per message.
    func admits(_ partition: TopicPartition) -> Bool {
        if anyHeld.load(ordering: .acquiring), held.withLock({ $0[partition] != nil }) {
            currentConsumer?.pause([partition])
            return false
        }
        guard anyAwaiting.load(ordering: .acquiring) else { return true }
        return awaiting.withLock { awaiting in
            guard awaiting.tickets[partition] != nil else { return true }
            currentConsumer?.pause([partition])
            return false
        }
    }

    /// `batch` without the records of held and awaiting partitions (fetched before they were held or made to
    /// await: never applied; an awaiting partition is sought to its stored offset when resolved).
    func withoutWithheld(_ batch: [DecodedRecord]) -> [DecodedRecord] {
        guard anyHeld.load(ordering: .acquiring) || anyAwaiting.load(ordering: .acquiring) else { return batch }
        let partitions = held.withLock { Set($0.keys) }.union(awaiting.withLock { $0.tickets.keys })
        return batch.filter { !partitions.contains($0.record.partitionKey) }
    }

    // MARK: The consumer's poll thread

    /// The starting offsets of `partitions` being assigned (the consumer's `startingOffsets`). One attempt: when
    /// the database does not answer, none (their beginning) and the partitions await (`assigned` pauses them).
    /// `refuse` is called when a stored offset lies beyond its partition's end.
    func startingOffsets(for partitions: [TopicPartition], refuse: (String) -> Void) -> [TopicPartition: Int64] {
        // Judged again now: a partition held by an assignment librdkafka refused is not held by this one unless
        // its gap is still there.
        setHeld([], forgetting: partitions)
        switch readStoredOffsets(partitions) {
        case .success(let stored):
            logger.info(
                "partitions start from the stored offsets",
                ["partitions": .int(partitions.count), "known": .int(stored.count)])
            let checked = checkTopics(stored, watermarkTimeout: .seconds(10), refuse: refuse)
            // Not judged (their watermarks unknown): they await like unread ones, from their beginning, paused. An
            // earlier assignment whose read failed but which librdkafka then refused never reached `assigned`: its
            // partitions are not awaiting by this one.
            unreadInAssignment.withLock { $0 = checked.unjudged }
            // Held partitions start at their beginning (as awaiting ones) and are held and paused in `assigned`,
            // before any message is handed out; `admits` drops whatever of theirs is fetched before the pause.
            gapsInAssignment.withLock { $0 = checked.held }
            return checked.starts
        case .failure(let error):
            gapsInAssignment.withLock { $0 = [] }
            unreadInAssignment.withLock { $0 = partitions }
            logger.warning(
                "cannot read the stored offsets: the partitions stay paused until the database answers",
                ["partitions": .int(partitions.count), "error": .string(error.description)])
            return [:]
        }
    }

    /// After the assignment, before any of its messages is handed out: those of `partitions` whose offsets could
    /// not be read are paused and await; those with a gap nobody accepted are paused and held.
    func assigned(_ partitions: [TopicPartition]) {
        let unread = Set(unreadInAssignment.withLock { unread in
            defer { unread = [] }
            return unread
        })
        let assigned = Set(partitions)
        let gaps = gapsInAssignment.withLock { gaps in
            defer { gaps = [] }
            return gaps.filter { assigned.contains($0.partition) }
        }
        held.withLock { _ in owned.withLock { $0.formUnion(partitions) } }
        if !gaps.isEmpty {
            setHeld(gaps, forgetting: [])
            currentConsumer?.pause(gaps.map(\.partition))
        }
        let waiting = partitions.filter { unread.contains($0) }
        guard !waiting.isEmpty else { return }
        currentConsumer?.pause(waiting)
        withAwaiting { $0.add(waiting) }
    }

    /// Before a revocation: their next owner reads their offsets (and checks them) itself.
    func revoking(_ partitions: [TopicPartition]) {
        withAwaiting { $0.forget(partitions) }
        unjudged.withLock { $0.subtract(partitions) }
        held.withLock { _ in owned.withLock { $0.subtract(partitions) } }
        setHeld([], forgetting: partitions)
    }

    // MARK: The worker's thread

    /// Reads, checks and applies the offsets of the awaiting partitions (one attempt; partitions left unjudged
    /// last time only once their backoff has passed). `refuse` as above. `discardBuffered` forgets the buffered
    /// messages of partitions about to resume from their stored offsets (fetched before they were made to await).
    /// Partitions whose watermarks are still unknown stay awaiting: `.ready` lets the worker apply the others.
    func resolveAwaiting(refuse: (String) -> Void, discardBuffered: ([TopicPartition]) -> Void) -> Resolution {
        let snapshot = awaiting.withLock { $0.tickets }
        guard !snapshot.isEmpty, let consumer = currentConsumer else { return .ready }
        let now = SystemTime.monotonicNanoseconds()
        if let due = recheck.withLock({ $0 }), due.snapshot == snapshot, now < due.dueNs { return .ready }
        let partitions = snapshot.keys.sorted()
        let stored: [TopicPartition: Int64]
        switch readStoredOffsets(partitions) {
        case .success(let offsets): stored = offsets
        case .failure(let error): return .databaseDown(error.description)
        }
        var refused = false
        let checked = checkTopics(stored, watermarkTimeout: Self.recheckTimeout, refuse: { reason in
            refused = true
            refuse(reason)
        })
        if refused { return .refused }
        // A held partition stays paused and is never sought: nothing of it is applied. Held only while still
        // awaiting under the same ticket (one revoked meanwhile is its next owner's to judge).
        setHeld(checked.held, forgetting: [], ifAwaiting: snapshot)
        let gapped = Set(checked.held.map(\.partition))
        let notJudged = Set(checked.unjudged)
        let started = partitions.filter { !gapped.contains($0) && !notJudged.contains($0) }
        var starts: [TopicPartition: Int64] = [:]
        for partition in started { starts[partition] = checked.starts[partition] ?? KafkaConsumer.beginningOffset }
        // Sought while still paused; a partition revoked meanwhile is refused by librdkafka: its next owner starts
        // it. Once sought, nothing fetched from the old position is handed out: what the buffer holds of them is
        // from before and goes, so their messages reach the store in contiguous offsets from the stored one.
        if !starts.isEmpty, let failure = consumer.seek(starts, timeout: .seconds(10)) {
            logger.warning("cannot move an awaiting partition to its stored offset", ["error": .string(failure.message)])
        }
        discardBuffered(started)
        let judged = snapshot.filter { !notJudged.contains($0.key) }
        let left = snapshot.filter { notJudged.contains($0.key) }
        // Done and resumed under the lock `admits` pauses awaiting partitions under.
        withAwaiting { awaiting in
            awaiting.done(judged)
            if !link.isPausedByWaterline, !started.isEmpty { consumer.resume(started) }
        }
        unjudged.withLock { $0 = notJudged.filter { snapshot[$0] != nil } }
        recheck.withLock { recheck in
            guard !left.isEmpty else {
                recheck = nil
                return
            }
            var backoff = recheck?.backoff ?? Backoff(initial: .seconds(1), maximum: .seconds(30))
            let wait = backoff.next()
            recheck = Recheck(
                snapshot: left, dueNs: now + UInt64(wait / .nanoseconds(1)), backoff: backoff)
        }
        logger.info(
            "awaiting partitions start from the stored offsets",
            [
                "partitions": .int(started.count), "known": .int(stored.count), "held": .int(gapped.count),
                "not_judged": .int(notJudged.count),
            ])
        return .ready
    }

    /// The store met partitions whose offsets jumped past their stored next offset (`BatchSummary.offsetJumps`):
    /// each is held like a gap found at assignment (paused, not ready, the error line, the gauge), unless
    /// `LEDGER_ACCEPT_OFFSET_GAP` names it: then the gap is recorded, the stored offset moves to the offset jumped
    /// to, and the partition awaits, to be sought there (what followed the jump in the buffer is discarded then).
    /// Only partitions still assigned: a jump reported after a revocation is the next owner's to find.
    func offsetsJumped(_ jumps: [KafkaBinding.OffsetGap]) {
        let assigned = held.withLock { _ in owned.withLock { $0 } }
        let mine = jumps.filter { assigned.contains($0.partition) }
        guard !mine.isEmpty else { return }
        let settled = settle(
            mine,
            heldMessage:
                "a partition's offsets jumped past its stored offset: the messages in between never reached the "
                + "ledger (retention deleted them while the partition was not fetched, or the topic holds offsets "
                + "no plain producer writes); the partition is not consumed until LEDGER_ACCEPT_OFFSET_GAP names "
                + "this gap (docs/OPERATIONS.md)")
        setHeld(settled.held, forgetting: [], ifOwned: true)
        currentConsumer?.pause(settled.held.map(\.partition))
        let rejudged = settled.accepted.map(\.partition)
        guard !rejudged.isEmpty else { return }
        held.withLock { _ in
            let stillOwned = owned.withLock { $0 }
            let partitions = rejudged.filter { stillOwned.contains($0) }
            currentConsumer?.pause(partitions)
            withAwaiting { $0.add(partitions) }
        }
    }

    // MARK: Both

    private var currentConsumer: KafkaConsumer? { link.consumer }

    /// The offsets stored in the database for `partitions` (absent: nothing applied from that partition yet).
    private func readStoredOffsets(_ partitions: [TopicPartition]) -> Result<[TopicPartition: Int64], PostgresError> {
        do {
            return .success(
                try database.withConnection { connection throws(PostgresError) in
                    try connection.withSession { session throws(PostgresError) in
                        try LedgerStore.storedOffsets(partitions, in: session)
                    }
                })
        } catch {
            // The schema may not exist yet (first start): nothing stored means from the beginning.
            if error.isUndefinedTable { return .success([:]) }
            return .failure(error)
        }
    }

    /// What the checks decided for the stored offsets of partitions being started.
    private struct Checked {
        /// Where each partition with a stored offset starts (absent: at its beginning).
        var starts: [TopicPartition: Int64]
        /// Partitions held for a gap nobody accepted (absent from `starts`).
        var held: [KafkaBinding.OffsetGap] = []
        /// Partitions with a stored offset whose watermarks were not known: not judged, so not started (absent
        /// from `starts`); they await and are checked again.
        var unjudged: [TopicPartition] = []
    }

    /// The guards against a database that does not match the topics, from each partition's watermarks (one request
    /// each). A partition whose stored offset lies beyond the partition's end (the topic was created again, or is
    /// another cluster's) would take new messages for applied ones: under `LEDGER_REBIND=topics` such partitions are
    /// applied again from their beginning; otherwise the ledger refuses to run (`refuse`). A partition whose stored
    /// offset lies below its first retained offset would skip what retention deleted: it is held
    /// (`checkGaps`).
    private func checkTopics(
        _ all: [TopicPartition: Int64], watermarkTimeout: Duration, refuse: (String) -> Void
    ) -> Checked {
        guard let consumer = currentConsumer, !all.isEmpty else { return Checked(starts: all) }
        var ends: [TopicPartition: Int64] = [:]
        var starts: [TopicPartition: Int64] = [:]
        for partition in all.keys {
            guard let marks = consumer.watermarks(partition, timeout: watermarkTimeout) else { continue }
            starts[partition] = marks.low
            ends[partition] = marks.high
        }
        let unknown = KafkaBinding.unjudgedPartitions(stored: all, watermarksKnown: Set(ends.keys))
        if !unknown.isEmpty {
            // Not judged this time (the leader did not answer): not started either, whatever it would skip. They
            // await, paused, and the worker checks them again with backoff.
            logger.warning(
                "the start and end of some partitions are not known: not consumed until checked against their "
                    + "stored offsets (retrying)",
                ["partitions": .string(unknown.map(\.description).joined(separator: ", "))])
        }
        let stored = all.filter { ends[$0.key] != nil }
        var checked = checkJudged(stored, lowWatermarks: starts, highWatermarks: ends, refuse: refuse)
        checked.unjudged = unknown
        return checked
    }

    /// `checkTopics` for the partitions whose watermarks are known.
    private func checkJudged(
        _ stored: [TopicPartition: Int64], lowWatermarks starts: [TopicPartition: Int64],
        highWatermarks ends: [TopicPartition: Int64], refuse: (String) -> Void
    ) -> Checked {
        let stale = KafkaBinding.stalePartitions(stored: stored, highWatermarks: ends)
        guard !stale.isEmpty else { return checkGaps(stored, lowWatermarks: starts) }
        guard rebind.contains(.topics) else {
            refuse(KafkaBinding.topicRefusal(stale.map(\.description)))
            return Checked(starts: stored)
        }
        do throws(PostgresError) {
            try database.withConnection { connection throws(PostgresError) in
                try connection.transaction { session throws(PostgresError) in
                    try KafkaBinding.forgetOffsets(stale, in: session)
                }
            }
        } catch {
            refuse("cannot forget the stored offsets of \(stale.map(\.description)) (LEDGER_REBIND=topics): \(error)")
            return Checked(starts: stored)
        }
        logger.warning(
            "partitions stored beyond their end are applied again from their beginning (LEDGER_REBIND=topics)",
            ["partitions": .string(stale.map(\.description).joined(separator: ", "))])
        return checkGaps(stored.filter { !stale.contains($0.key) }, lowWatermarks: starts)
    }

    /// Holds the partitions whose stored offset lies below their low watermark, each named in an error, unless
    /// `LEDGER_ACCEPT_OFFSET_GAP` accepts that very gap: then the loss is recorded and the partition starts at its
    /// low watermark. An acceptance the database does not take now is held, and tried again at the next assignment.
    private func checkGaps(_ stored: [TopicPartition: Int64], lowWatermarks: [TopicPartition: Int64]) -> Checked {
        var checked = Checked(starts: stored)
        let gaps = KafkaBinding.offsetGaps(stored: stored, lowWatermarks: lowWatermarks)
        guard !gaps.isEmpty else { return checked }
        let settled = settle(
            gaps,
            heldMessage:
                "a partition's stored offset is below its first retained offset: messages were deleted before the "
                + "ledger applied them (a database older than the topics' retention); the partition is not "
                + "consumed until LEDGER_ACCEPT_OFFSET_GAP names this gap (docs/OPERATIONS.md)")
        for gap in settled.held { checked.starts[gap.partition] = nil }
        for gap in settled.accepted { checked.starts[gap.partition] = gap.lowWatermark }
        checked.held = settled.held
        return checked
    }

    /// Records the gaps `LEDGER_ACCEPT_OFFSET_GAP` names (each partition's stored offset moves to the gap's end),
    /// and names each of the others in an error line (`heldMessage`): those are to be held. An acceptance the
    /// database does not take now (it is down, or the stored offset moved meanwhile) is held too, and tried again
    /// at the next assignment (or jump).
    private func settle(_ gaps: [KafkaBinding.OffsetGap], heldMessage: String)
        -> (held: [KafkaBinding.OffsetGap], accepted: [KafkaBinding.OffsetGap])
    {
        var held = gaps.filter { !KafkaBinding.isAccepted($0, by: acceptedGaps) }
        let toAccept = gaps.filter { KafkaBinding.isAccepted($0, by: acceptedGaps) }
        var accepted: [KafkaBinding.OffsetGap] = []
        if !toAccept.isEmpty {
            do throws(PostgresError) {
                accepted = try database.withConnection { connection throws(PostgresError) in
                    try connection.transaction { session throws(PostgresError) in
                        try KafkaBinding.acceptGaps(toAccept, in: session, nowMs: SystemTime.wallMilliseconds())
                    }
                }
                // Its stored offset moved meanwhile (another instance applied or accepted it): judged again at the
                // next assignment.
                held += toAccept.filter { !accepted.contains($0) }
                for gap in accepted {
                    gapMetrics?.acceptedOffsets.increment(by: Int(gap.deletedOffsets))
                    log(
                        gap, asError: false,
                        "an offset gap was accepted: the partition goes on from its first retained offset; what was "
                            + "deleted before it was never applied (accepted_offset_gaps)")
                }
            } catch {
                logger.error(
                    "cannot record an accepted offset gap: the partitions stay held until the next assignment",
                    ["error": .string(error.description)])
                held += toAccept
            }
        }
        held.sort()
        for gap in held where !isHeld(gap) { log(gap, asError: true, heldMessage) }
        return (held, accepted)
    }

    /// Whether `gap` is held already (named in an error line when it was).
    private func isHeld(_ gap: KafkaBinding.OffsetGap) -> Bool {
        held.withLock { $0[gap.partition] == gap }
    }

    /// One line naming the gap: topic, partition, stored offset, low watermark, and the acceptance that names it.
    private func log(_ gap: KafkaBinding.OffsetGap, asError: Bool, _ message: String) {
        let fields: KeyValuePairs<String, LogValue> = [
            "topic": .string(gap.partition.topic), "partition": .int(Int(gap.partition.partition)),
            "stored_offset": .int(Int(gap.stored)), "low_watermark": .int(Int(gap.lowWatermark)),
            "deleted_offsets": .int(Int(gap.deletedOffsets)), "accept_with": .string(gap.acceptance),
        ]
        if asError { logger.error(message, fields) } else { logger.warning(message, fields) }
    }

    /// Forgets the held partitions among `forgetting`, then holds `gaps` (with `ifAwaiting`, only those still
    /// awaiting under the ticket it gives them: checked under the lock, so a revocation's forgetting comes after);
    /// updates the gauge.
    /// With `ifOwned`, only partitions still assigned (checked under the same lock as a revocation's forgetting).
    private func setHeld(
        _ gaps: [KafkaBinding.OffsetGap], forgetting: [TopicPartition],
        ifAwaiting snapshot: [TopicPartition: UInt64]? = nil, ifOwned: Bool = false
    ) {
        let count = held.withLock { held -> Int in
            for partition in forgetting { held[partition] = nil }
            let current = snapshot.map { _ in awaiting.withLock { $0.tickets } }
            let assigned = ifOwned ? owned.withLock { $0 } : nil
            for gap in gaps
            where (snapshot == nil || current?[gap.partition] == snapshot?[gap.partition])
                && (assigned?.contains(gap.partition) ?? true)
            {
                held[gap.partition] = gap
            }
            anyHeld.store(!held.isEmpty, ordering: .releasing)
            return held.count
        }
        gapMetrics?.heldPartitions.set(Double(count))
    }

    /// Changes the awaiting partitions under their lock, keeping `anyAwaiting` in step.
    private func withAwaiting<Result>(_ change: (inout AwaitingStarts) -> Result) -> Result {
        awaiting.withLock { awaiting in
            let result = change(&awaiting)
            anyAwaiting.store(!awaiting.isEmpty, ordering: .releasing)
            return result
        }
    }
}
