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
