import Kafka
import Postgres
import ServiceRuntime
import ServiceSupport

/// Where the ledger's assigned partitions start: at the next offsets stored in the database, the truth (the group's
/// offsets in Kafka follow it for lag only), checked against each partition's end (`checkTopics`).
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
    private let logger: Logger
    private let awaiting = Locked(AwaitingStarts())
    /// The partitions of the assignment in progress whose offsets the database did not give: awaiting from the
    /// moment they are assigned (`assigned`), not before, so the worker never seeks a partition not assigned yet.
    private let unreadInAssignment = Locked<[TopicPartition]>([])
    /// The service's consumer link: the consumer, once attached, and whether the waterline holds fetching paused
    /// (then the link resumes every partition itself once under its low water mark, and a resolved partition stays
    /// paused until then).
    private let link: ConsumerLink

    init(database: DatabaseLink, rebind: Set<KafkaBinding.Rebind>, link: ConsumerLink, logger: Logger) {
        self.database = database
        self.rebind = rebind
        self.link = link
        self.logger = logger
    }

    /// How many assigned partitions wait for their stored offsets.
    var awaitingCount: Int { awaiting.withLock { $0.count } }

    // MARK: The consumer's poll thread

    /// The starting offsets of `partitions` being assigned (the consumer's `startingOffsets`). One attempt: when
    /// the database does not answer, none (their beginning) and the partitions await (`assigned` pauses them).
    /// `refuse` is called when a stored offset lies beyond its partition's end.
    func startingOffsets(for partitions: [TopicPartition], refuse: (String) -> Void) -> [TopicPartition: Int64] {
        switch readStoredOffsets(partitions) {
        case .success(let stored):
            // An earlier assignment whose read failed but which librdkafka then refused never reached `assigned`:
            // its partitions must not be held by this one.
            unreadInAssignment.withLock { $0 = [] }
            logger.info(
                "partitions start from the stored offsets",
                ["partitions": .int(partitions.count), "known": .int(stored.count)])
            return checkTopics(stored, refuse: refuse)
        case .failure(let error):
            unreadInAssignment.withLock { $0 = partitions }
            logger.warning(
                "cannot read the stored offsets: the partitions stay paused until the database answers",
                ["partitions": .int(partitions.count), "error": .string(error.description)])
            return [:]
        }
    }

    /// After the assignment, before any of its messages is handed out: those of `partitions` whose offsets could
    /// not be read are paused and await.
    func assigned(_ partitions: [TopicPartition]) {
        let unread = Set(unreadInAssignment.withLock { unread in
            defer { unread = [] }
            return unread
        })
        let held = partitions.filter { unread.contains($0) }
        guard !held.isEmpty else { return }
        currentConsumer?.pause(held)
        awaiting.withLock { $0.add(held) }
    }

    /// Before a revocation: their next owner reads their offsets itself.
    func revoking(_ partitions: [TopicPartition]) {
        awaiting.withLock { $0.forget(partitions) }
    }

    // MARK: The worker's thread

    /// Reads, checks and applies the offsets of the awaiting partitions (one attempt). `refuse` as above.
    func resolveAwaiting(refuse: (String) -> Void) -> Resolution {
        let snapshot = awaiting.withLock { $0.tickets }
        guard !snapshot.isEmpty, let consumer = currentConsumer else { return .ready }
        let partitions = snapshot.keys.sorted()
        let stored: [TopicPartition: Int64]
        switch readStoredOffsets(partitions) {
        case .success(let offsets): stored = offsets
        case .failure(let error): return .databaseDown(error.description)
        }
        var refused = false
        let checked = checkTopics(stored, refuse: { reason in
            refused = true
            refuse(reason)
        })
        if refused { return .refused }
        var starts: [TopicPartition: Int64] = [:]
        for partition in partitions { starts[partition] = checked[partition] ?? KafkaConsumer.beginningOffset }
        // A partition revoked meanwhile is refused by librdkafka: its next owner starts it.
        if let failure = consumer.seek(starts, timeout: .seconds(10)) {
            logger.warning("cannot move an awaiting partition to its stored offset", ["error": .string(failure.message)])
        }
        if !link.isPausedByWaterline { consumer.resume(partitions) }
        awaiting.withLock { $0.done(snapshot) }
        logger.info(
            "awaiting partitions start from the stored offsets",
            ["partitions": .int(partitions.count), "known": .int(stored.count)])
        return .ready
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

    /// The guard against an earlier incarnation of a topic: a partition whose stored offset lies beyond the
    /// partition's end (the topic was created again, or is another cluster's) would take new messages for applied
    /// ones. Under `LEDGER_REBIND=topics` such partitions are applied again from their beginning; otherwise the
    /// ledger refuses to run (`refuse`).
    private func checkTopics(_ stored: [TopicPartition: Int64], refuse: (String) -> Void) -> [TopicPartition: Int64] {
        guard let consumer = currentConsumer, !stored.isEmpty else { return stored }
        var ends: [TopicPartition: Int64] = [:]
        for partition in stored.keys {
            ends[partition] = consumer.highWatermark(partition, timeout: .seconds(10))
        }
        let unknown = stored.keys.filter { ends[$0] == nil }.map(\.description).sorted()
        if !unknown.isEmpty {
            // Not judged this time (the leader did not answer); the next assignment checks them again.
            logger.warning(
                "the end of some partitions is not known: not checked against their stored offsets",
                ["partitions": .string(unknown.joined(separator: ", "))])
        }
        let stale = KafkaBinding.stalePartitions(stored: stored, highWatermarks: ends)
        guard !stale.isEmpty else { return stored }
        guard rebind.contains(.topics) else {
            refuse(KafkaBinding.topicRefusal(stale.map(\.description)))
            return stored
        }
        do throws(PostgresError) {
            try database.withConnection { connection throws(PostgresError) in
                try connection.transaction { session throws(PostgresError) in
                    try KafkaBinding.forgetOffsets(stale, in: session)
                }
            }
        } catch {
            refuse("cannot forget the stored offsets of \(stale.map(\.description)) (LEDGER_REBIND=topics): \(error)")
            return stored
        }
        logger.warning(
            "partitions stored beyond their end are applied again from their beginning (LEDGER_REBIND=topics)",
            ["partitions": .string(stale.map(\.description).joined(separator: ", "))])
        return stored.filter { !stale.contains($0.key) }
    }
}
