import Kafka
import LedgerRules
import Postgres

/// Applies batches of consumed messages to the ledger inside one database transaction each, exactly once: the
/// partitions' `consumer_offsets` rows are locked first and every message below a partition's stored next offset is
/// skipped (already applied by an earlier batch, this instance's or another's), and the new next offsets are written
/// in the same transaction as everything the messages changed.
public struct LedgerStore: Sendable {
    public let topics: LedgerTopics
    public let policy: OwnershipPolicy
    public let sandboxPolicy: SandboxPolicy
    /// `LEDGER_CLAWBACK`.
    public let clawback: ClawbackPolicy

    public init(
        topics: LedgerTopics, policy: OwnershipPolicy, sandboxPolicy: SandboxPolicy = .separate,
        clawback: ClawbackPolicy = .floor
    ) {
        self.topics = topics
        self.policy = policy
        self.sandboxPolicy = sandboxPolicy
        self.clawback = clawback
    }

    /// Applies `records` (in order; any partitions of the two topics) within the caller's transaction.
    /// - Throws: `PostgresError`; the caller rolls back and retries the same batch (nothing is skipped).
    public func apply(_ records: [LedgerRecord], in session: PostgresSession, nowMs: Int64) throws(PostgresError)
        -> BatchSummary
    {
        try apply(decoded: records.map(decode), in: session, nowMs: nowMs)
    }

    /// `record` with its message decoded, ready for `apply(decoded:)`: decoding needs no database, so the worker
    /// decodes the next batch while the database applies this one.
    func decode(_ record: LedgerRecord) -> DecodedRecord {
        DecodedRecord(record: record, message: BatchWork.decode(record, topics: topics))
    }

    /// `apply` of records decoded before (`decode`).
    func apply(decoded records: [DecodedRecord], in session: PostgresSession, nowMs: Int64) throws(PostgresError)
        -> BatchSummary
    {
        var work = BatchWork(
            session: session, topics: topics, policy: policy, sandboxPolicy: sandboxPolicy, clawback: clawback,
            nowMs: nowMs)
        // Locked in a fixed order, so two instances never wait on each other's partitions in a cycle.
        let partitions = Set(records.map(\.record.partitionKey)).sorted()
        var stored = try Self.lockOffsets(partitions, in: session)
        if stored.count < partitions.count {
            // Partitions never applied from before: their rows first (a concurrent instance may insert them too).
            let missing = partitions.filter { stored[$0] == nil }
            try session.execute(
                """
                INSERT INTO consumer_offsets (topic, partition, next_offset)
                SELECT t, p, 0 FROM unnest($1::text[], $2::int[]) AS u(t, p) ON CONFLICT DO NOTHING
                """, [.textArray(missing.map(\.topic)), .textArray(missing.map { String($0.partition) })])
            let locked = try Self.lockOffsets(partitions, in: session)
            // A row inserted just now (0) stores nothing yet: its partition starts at its first record. One another
            // instance committed meanwhile (above 0: it applied something) is a stored offset like any other.
            stored = locked.filter { stored[$0.key] != nil || $0.value > 0 }
        }
        // Below a partition's next offset: applied before; at it: applied now; above it: a jump, held.
        let walk = KafkaBinding.offsetWalk(records.map { ($0.record.partitionKey, $0.record.offset) }, stored: stored)
        let next = walk.next
        work.summary.alreadyApplied = walk.alreadyApplied
        work.summary.offsetJumps = walk.jumps
        // Read where they stand: copying each record (its bytes and decoded message) costs retains and releases.
        try work.prefetch(walk.fresh.lazy.map { records[$0].message })
        for index in walk.fresh {
            try work.apply(records[index].record, records[index].message)
        }
        let moved = next.filter { stored[$0.key] != $0.value }.sorted { $0.key < $1.key }
        if !moved.isEmpty {
            try work.write(
                """
                UPDATE consumer_offsets c SET next_offset = u.n
                FROM unnest($1::text[], $2::int[], $3::bigint[]) AS u(t, p, n)
                WHERE c.topic = u.t AND c.partition = u.p
                """,
                [
                    .textArray(moved.map(\.key.topic)), .textArray(moved.map { String($0.key.partition) }),
                    .textArray(moved.map { String($0.value) }),
                ])
        }
        try work.finish()
        work.summary.nextOffsets = next
        return work.summary
    }

    /// Locks the offset rows of `partitions` (in their order: two instances never wait on each other in a cycle)
    /// and reads their next offsets; partitions without a row are absent.
    private static func lockOffsets(_ partitions: [TopicPartition], in session: PostgresSession) throws(PostgresError)
        -> [TopicPartition: Int64]
    {
        try offsets(partitions, in: session, clause: "ORDER BY c.topic, c.partition FOR UPDATE OF c")
    }

    /// The stored next offsets of `partitions` (absent: nothing applied from that partition yet), in one statement.
    public static func storedOffsets(_ partitions: [TopicPartition], in session: PostgresSession) throws(PostgresError)
        -> [TopicPartition: Int64]
    {
        try offsets(partitions, in: session, clause: "")
    }

    private static func offsets(_ partitions: [TopicPartition], in session: PostgresSession, clause: String)
        throws(PostgresError) -> [TopicPartition: Int64]
    {
        guard !partitions.isEmpty else { return [:] }
        let rows = try session.execute(
            """
            SELECT c.topic, c.partition, c.next_offset FROM consumer_offsets c
            JOIN unnest($1::text[], $2::int[]) AS u(t, p) ON c.topic = u.t AND c.partition = u.p \(clause)
            """, [.textArray(partitions.map(\.topic)), .textArray(partitions.map { String($0.partition) })]
        ).rows
        var offsets: [TopicPartition: Int64] = [:]
        for row in rows {
            offsets[TopicPartition(topic: try row.string("topic"), partition: Int32(try row.int64("partition")))] =
                try row.int64("next_offset")
        }
        return offsets
    }
}

/// A consumed message and its decoded form (`LedgerStore.decode`).
struct DecodedRecord: Sendable {
    let record: LedgerRecord
    let message: BatchWork.Decoded
}

extension LedgerStore {
    /// Records `record` as a dead letter and moves its partition past it, in the caller's transaction: for a message
    /// the database itself refuses (a data exception such as a NUL byte in a text value), found by applying a failed
    /// batch one message at a time.
    public func deadLetter(_ record: LedgerRecord, reason: String, in session: PostgresSession, nowMs: Int64)
        throws(PostgresError) -> BatchSummary
    {
        var summary = BatchSummary()
        let partition: [PostgresValue] = [.text(record.topic), .int(Int64(record.partition))]
        try session.execute(
            "INSERT INTO consumer_offsets (topic, partition, next_offset) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING",
            partition)
        let next = try session.execute(
            "SELECT next_offset FROM consumer_offsets WHERE topic = $1 AND partition = $2 FOR UPDATE", partition
        ).rows[0].int64("next_offset")
        guard record.offset >= next else {
            summary.alreadyApplied = 1
            summary.nextOffsets[record.partitionKey] = next
            return summary
        }
        let inserted = try session.execute(
            """
            INSERT INTO dead_letters (topic, partition, "offset", reason, raw, recorded_at_ms)
            VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING
            """,
            partition + [.int(record.offset), .text(reason), .bytes(record.value), .int(nowMs)])
        try session.execute(
            "UPDATE consumer_offsets SET next_offset = $3 WHERE topic = $1 AND partition = $2",
            partition + [.int(record.offset + 1)])
        summary.applied = 1
        summary.deadLettered = inserted.affectedRows
        summary.nextOffsets[record.partitionKey] = record.offset + 1
        return summary
    }
}
