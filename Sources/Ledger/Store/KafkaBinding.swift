import Kafka
import Postgres

/// The guard against the wrong database: a ledger database records the Kafka cluster it applied (`kafka_bindings`),
/// and its stored offsets say how far into each partition it got. A ledger pointed at a database bound to another
/// cluster, or at a topic created again (its offsets restart at 0, below the stored ones), would take new messages
/// for applied ones and skip their money; it refuses to run unless `LEDGER_REBIND` says what to rebind.
public enum KafkaBinding {
    /// What `LEDGER_REBIND` may name.
    public enum Rebind: String, Sendable, CaseIterable {
        /// Bind the database to the cluster the ledger now reads (a migration to a new cluster).
        case cluster
        /// Partitions whose stored offset is past the partition's end start again from the beginning (a topic
        /// created again; purchases dedupe on their state and events on `event_id`, so nothing moves twice).
        case topics
    }

    public enum ClusterDecision: Sendable, Equatable {
        /// The database's binding matches, or the cluster id is unknown (a cluster that reports none).
        case bound
        /// A database bound to no cluster yet: record this one.
        case bind(String)
        /// Bound to another cluster: refuse, saying how to go on.
        case refuse(String)
        /// Bound to another cluster and told to rebind.
        case rebind(String)
    }

    /// - Parameters:
    ///   - stored: the cluster id the database is bound to (nil: none yet).
    ///   - current: the cluster id Kafka reports (nil: unknown).
    public static func cluster(stored: String?, current: String?, rebind: Set<Rebind>) -> ClusterDecision {
        guard let current, !current.isEmpty else { return .bound }
        guard let stored else { return .bind(current) }
        if stored == current { return .bound }
        if rebind.contains(.cluster) { return .rebind(current) }
        return .refuse(
            "the ledger database is bound to Kafka cluster \(stored), but Kafka reports cluster \(current): this is "
                + "another cluster's ledger (or a restored cluster). Point LEDGER_DATABASE_URL at this cluster's "
                + "ledger, or set LEDGER_REBIND=cluster to bind this database to \(current) (docs/OPERATIONS.md, "
                + "receipt-ledger runbook)")
    }

    /// The partitions whose stored next offset lies beyond the partition's end (`highWatermarks`): a topic created
    /// again, or another cluster's topic of the same name. Partitions without a stored offset or a known end are
    /// never stale.
    public static func stalePartitions<Partition: Hashable & Comparable>(
        stored: [Partition: Int64], highWatermarks: [Partition: Int64]
    ) -> [Partition] {
        stored.compactMap { partition, next in
            guard let end = highWatermarks[partition], next > end else { return nil }
            return partition
        }.sorted()
    }

    /// The refusal for stale partitions when `LEDGER_REBIND` does not name `topics`.
    public static func topicRefusal(_ stale: [String]) -> String {
        "the ledger database has applied more of \(stale.joined(separator: ", ")) than the topic now holds: the "
            + "topic was created again (or this is another cluster's topic). Set LEDGER_REBIND=topics to apply "
            + "these partitions from their beginning (purchases dedupe on their state, events on event_id), or point "
            + "LEDGER_DATABASE_URL at the right ledger (docs/OPERATIONS.md, receipt-ledger runbook)"
    }

    // MARK: Offsets below the partition's start

    /// A partition whose stored next offset lies below its low watermark (its first retained offset): the messages
    /// in between were deleted (retention) before this database applied them, typically after restoring a backup
    /// older than the topics' retention. librdkafka would start at the low watermark without a word
    /// (`auto.offset.reset`); the ledger holds the partition instead until the operator accepts the loss.
    public struct OffsetGap: Sendable, Equatable, Comparable {
        public let partition: TopicPartition
        /// The next offset the database would apply.
        public let stored: Int64
        /// The partition's first offset still in Kafka.
        public let lowWatermark: Int64

        public init(partition: TopicPartition, stored: Int64, lowWatermark: Int64) {
            self.partition = partition
            self.stored = stored
            self.lowWatermark = lowWatermark
        }

        /// Offsets deleted before they were applied (at most that many messages: transaction markers take offsets).
        public var deletedOffsets: Int64 { lowWatermark - stored }

        /// The `LEDGER_ACCEPT_OFFSET_GAP` entry that accepts exactly this gap: `topic:partition:stored offset`.
        public var acceptance: String { "\(partition.topic):\(partition.partition):\(stored)" }

        public static func < (lhs: OffsetGap, rhs: OffsetGap) -> Bool { lhs.partition < rhs.partition }
    }

    /// The partitions whose stored next offset lies below their low watermark. Partitions without a stored offset
    /// (nothing applied yet: they start at their beginning, like a new ledger's) or without a known low watermark
    /// have none.
    public static func offsetGaps(stored: [TopicPartition: Int64], lowWatermarks: [TopicPartition: Int64]) -> [OffsetGap] {
        stored.compactMap { partition, next in
            guard let low = lowWatermarks[partition], next < low else { return nil }
            return OffsetGap(partition: partition, stored: next, lowWatermark: low)
        }.sorted()
    }

    /// What a batch's offsets say, partition by partition, against the next offsets stored before it
    /// (`offsetWalk`).
    public struct OffsetWalk: Sendable, Equatable {
        /// The positions (in the batch) of the records to apply, in order.
        public var fresh: [Int] = []
        /// Records below their partition's next offset: applied before (a redelivery after a seek, a crash or a
        /// rebalance).
        public var alreadyApplied = 0
        /// Partitions whose offsets jumped past their next offset: `stored` is the next offset the ledger expected,
        /// `lowWatermark` the offset it was handed instead. None of their records from the jump on is applied.
        public var jumps: [OffsetGap] = []
        /// The next offset of each partition after the records to apply.
        public var next: [TopicPartition: Int64] = [:]
    }

    /// Walks a batch's `offsets` (in the order they were consumed) against `stored`, the next offsets stored before
    /// the batch. The ledger's input topics have contiguous offsets (plain, non-transactional producers, whether
    /// idempotent or not: no control records; delete retention: no compaction holes; docs/OPERATIONS.md, Topics),
    /// so a partition with a stored next offset `n` must be handed `n` next: a record below `n` was applied before,
    /// one at `n` is applied (and `n` moves on), and one above `n` means the offsets in between never reached the
    /// ledger (librdkafka reset a fetch position that retention had deleted: `auto.offset.reset`). That partition
    /// is held from its jump on, like an offset gap found at assignment, never applied past silently. A partition
    /// with nothing stored (never applied) starts wherever its first record is (a new ledger reads from the
    /// partition's beginning), then must be contiguous as well.
    public static func offsetWalk(_ offsets: [(partition: TopicPartition, offset: Int64)], stored: [TopicPartition: Int64])
        -> OffsetWalk
    {
        var walk = OffsetWalk(next: stored)
        var jumped: Set<TopicPartition> = []
        for (index, record) in offsets.enumerated() where !jumped.contains(record.partition) {
            guard let expected = walk.next[record.partition] else {
                walk.fresh.append(index)
                walk.next[record.partition] = record.offset + 1
                continue
            }
            if record.offset < expected {
                walk.alreadyApplied += 1
            } else if record.offset == expected {
                walk.fresh.append(index)
                walk.next[record.partition] = expected + 1
            } else {
                jumped.insert(record.partition)
                walk.jumps.append(OffsetGap(partition: record.partition, stored: expected, lowWatermark: record.offset))
            }
        }
        walk.jumps.sort()
        return walk
    }

    /// The partitions with a stored offset whose watermarks are not known (their leader did not answer): neither
    /// gap nor staleness can be judged, so they must not start (the stored offset could lie below the first
    /// retained one, and librdkafka would skip to it without a word). Partitions with nothing stored start at their
    /// beginning and need no judging.
    public static func unjudgedPartitions(stored: [TopicPartition: Int64], watermarksKnown: Set<TopicPartition>)
        -> [TopicPartition]
    {
        stored.keys.filter { !watermarksKnown.contains($0) }.sorted()
    }

    /// A gap is accepted only by an entry naming its partition and its stored offset (`LEDGER_ACCEPT_OFFSET_GAP`):
    /// an entry left in place never accepts a later, different gap of the same partition.
    public static func isAccepted(_ gap: OffsetGap, by accepted: [TopicPartition: Int64]) -> Bool {
        accepted[gap.partition] == gap.stored
    }

    /// Why the ledger is not ready while it holds `gaps`, and how to go on (`/readyz`).
    public static func gapRefusal(_ gaps: [OffsetGap]) -> String {
        let each = gaps.map { gap in
            "\(gap.partition) stored offset \(gap.stored) is below its first retained offset \(gap.lowWatermark) "
                + "(\(gap.deletedOffsets) offsets deleted before they were applied)"
        }
        return "not consuming \(each.joined(separator: "; ")): the database is older than the topics' retention "
            + "(a restored backup?). Recover or accept what is missing, then set LEDGER_ACCEPT_OFFSET_GAP="
            + gaps.map(\.acceptance).joined(separator: ",") + " (docs/OPERATIONS.md, restoring the ledger's database)"
    }

    /// One `LEDGER_ACCEPT_OFFSET_GAP` entry, `topic:partition:stored offset`; nil when it is not one. Topic names
    /// hold no ':' (Kafka allows letters, digits, '.', '_' and '-').
    public static func acceptedGap(_ entry: String) -> (partition: TopicPartition, stored: Int64)? {
        let parts = entry.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty,
            parts[0].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }),
            let partition = Int32(parts[1]), partition >= 0, let stored = Int64(parts[2]), stored >= 0
        else { return nil }
        return (TopicPartition(topic: String(parts[0]), partition: partition), stored)
    }

    // MARK: Storage

    /// The cluster id the database is bound to.
    public static func storedCluster(in session: PostgresSession) throws(PostgresError) -> String? {
        try session.execute("SELECT value FROM kafka_bindings WHERE name = 'cluster_id'").rows.first?.optionalString("value")
    }

    public static func bindCluster(_ clusterId: String, in session: PostgresSession, nowMs: Int64)
        throws(PostgresError)
    {
        try session.execute(
            """
            INSERT INTO kafka_bindings (name, value, bound_at_ms) VALUES ('cluster_id', $1, $2)
            ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, bound_at_ms = EXCLUDED.bound_at_ms
            """, [.text(clusterId), .int(nowMs)])
    }

    /// Accepts `gaps` for good: each partition's stored offset moves to its low watermark (only if it is still the
    /// stored offset the gap was found with), and the gap is recorded in `accepted_offset_gaps`, the audit of what
    /// was never applied.
    /// - Returns: the gaps accepted now (one whose stored offset moved meanwhile is left out).
    @discardableResult
    public static func acceptGaps(_ gaps: [OffsetGap], in session: PostgresSession, nowMs: Int64) throws(PostgresError)
        -> [OffsetGap]
    {
        var accepted: [OffsetGap] = []
        for gap in gaps {
            let moved = try session.execute(
                """
                UPDATE consumer_offsets SET next_offset = $4
                WHERE topic = $1 AND partition = $2 AND next_offset = $3
                """,
                [.text(gap.partition.topic), .int(Int64(gap.partition.partition)), .int(gap.stored), .int(gap.lowWatermark)])
            guard moved.affectedRows == 1 else { continue }
            try session.execute(
                """
                INSERT INTO accepted_offset_gaps (topic, partition, stored_offset, low_watermark, accepted_at_ms)
                VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING
                """,
                [
                    .text(gap.partition.topic), .int(Int64(gap.partition.partition)), .int(gap.stored),
                    .int(gap.lowWatermark), .int(nowMs),
                ])
            accepted.append(gap)
        }
        return accepted
    }

    /// Forgets the stored offsets of `partitions` (they are applied again from their beginning).
    public static func forgetOffsets(_ partitions: [TopicPartition], in session: PostgresSession) throws(PostgresError) {
        guard !partitions.isEmpty else { return }
        try session.execute(
            """
            DELETE FROM consumer_offsets c USING unnest($1::text[], $2::int[]) AS u(t, p)
            WHERE c.topic = u.t AND c.partition = u.p
            """, [.textArray(partitions.map(\.topic)), .textArray(partitions.map { String($0.partition) })])
    }
}
