import Postgres

/// What `receipt-reconcile` recorded in its own tables (`reconcile_sweeps`, `reconcile_corrections`), read for the
/// ledger's `ledger_reconcile_*` gauges: the sweep is a CronJob, so the long-running ledger is where Prometheus
/// reads its figures. The tables belong to receipt-reconcile (its own migrations); the ledger only reads them and
/// reports nothing while they do not exist.
public struct ReconcileFigures: Sendable, Equatable {
    /// When the last succeeded sweep finished (epoch ms); nil when none has.
    public var lastSweepFinishedMs: Int64?
    /// Of the last succeeded sweep: purchases Apple shows refunded that the ledger showed credited.
    public var driftAppleRefunded: Int64
    /// ... and purchases the ledger shows debited or refused that Apple shows no refund of.
    public var driftLedgerDebited: Int64
    /// ... and purchases credited in its window that no sweep has checked yet (the budget's backlog).
    public var uncheckedPurchases: Int64
    /// Corrections recorded, all time.
    public var notificationCorrections: Int64
    public var refundCorrections: Int64
    /// Corrections recorded and not (yet) acknowledged by Kafka.
    public var unproducedCorrections: Int64
    /// Drifts the sweeps could not correct and recorded (`reconcile_unresolved`), all time, by reason; empty
    /// before receipt-reconcile's version 2.
    public var unresolvedByReason: [String: Int64] = [:]

    /// nil when receipt-reconcile never ran on this database (its tables do not exist).
    public static func read(on connection: PostgresConnection) throws(PostgresError) -> ReconcileFigures? {
        let exists = try connection.execute(
            """
            SELECT to_regclass('reconcile_sweeps') IS NOT NULL AND to_regclass('reconcile_corrections') IS NOT NULL
                AS tables_exist
            """
        ).rows[0]
        guard try exists.bool("tables_exist") else { return nil }
        let row = try connection.execute(
            """
            SELECT s.finished_at_ms, coalesce(s.drift_apple_refunded, 0) AS drift_apple_refunded,
                coalesce(s.drift_ledger_debited, 0) AS drift_ledger_debited,
                coalesce(s.purchases_unchecked, 0) AS purchases_unchecked,
                (SELECT count(*) FROM reconcile_corrections WHERE kind = 'notification') AS notification_corrections,
                (SELECT count(*) FROM reconcile_corrections WHERE kind = 'refund') AS refund_corrections,
                (SELECT count(*) FROM reconcile_corrections WHERE produced_at_ms IS NULL) AS unproduced_corrections
            FROM (SELECT 1) AS one LEFT JOIN LATERAL (
                SELECT finished_at_ms, drift_apple_refunded, drift_ledger_debited, purchases_unchecked
                FROM reconcile_sweeps WHERE status = 'succeeded' ORDER BY finished_at_ms DESC LIMIT 1
            ) AS s ON true
            """
        ).rows[0]
        var unresolved: [String: Int64] = [:]
        let hasUnresolved = try connection.execute(
            "SELECT to_regclass('reconcile_unresolved') IS NOT NULL AS present"
        ).rows[0].bool("present")
        if hasUnresolved {
            for row in try connection.execute(
                "SELECT reason, count(*) AS drifts FROM reconcile_unresolved GROUP BY reason"
            ).rows {
                unresolved[try row.string("reason")] = try row.int64("drifts")
            }
        }
        return ReconcileFigures(
            lastSweepFinishedMs: try row.optionalInt64("finished_at_ms"),
            driftAppleRefunded: try row.int64("drift_apple_refunded"),
            driftLedgerDebited: try row.int64("drift_ledger_debited"),
            uncheckedPurchases: try row.int64("purchases_unchecked"),
            notificationCorrections: try row.int64("notification_corrections"),
            refundCorrections: try row.int64("refund_corrections"),
            unproducedCorrections: try row.int64("unproduced_corrections"), unresolvedByReason: unresolved)
    }
}
