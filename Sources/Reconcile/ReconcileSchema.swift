import Postgres

/// `receipt-reconcile`'s own tables in the ledger's database, with their own migrations bookkeeping
/// (`reconcile_schema_migrations`; the ledger's `schema_migrations` is never touched: the ledger refuses versions it
/// does not know). The ledger reads `reconcile_sweeps` and `reconcile_corrections` for its gauges and copes with
/// their absence. Never edit a released migration: add the next version.
public enum ReconcileSchema: VersionedSchema {
    /// An advisory lock key of its own (the ledger's are 0x1ed6_e0a1 and the 0x1ed6 namespace).
    public static let migrationLockKey: Int64 = 0x1ed6_5ec0
    /// Held for the whole sweep: two sweeps never run at once (the CronJob forbids it too).
    static let sweepLockKey: Int64 = 0x1ed6_5ec1

    public static let migrations: [(version: Int64, statements: [String])] = [
        (
            1,
            [
                // Get Notification History per environment: notifications signed before `window_start_ms` were
                // swept; a window in progress (`window_end_ms`) continues at `pagination_token`.
                """
                CREATE TABLE reconcile_cursors (
                    environment text PRIMARY KEY CHECK (environment IN ('Production','Sandbox')),
                    window_start_ms bigint NOT NULL,
                    window_end_ms bigint,
                    pagination_token text,
                    updated_at_ms bigint NOT NULL
                )
                """,
                // When each credited purchase's refund history was last read: the oldest-unchecked go first.
                """
                CREATE TABLE reconcile_checks (
                    credit_key text PRIMARY KEY,
                    checked_at_ms bigint NOT NULL
                )
                """,
                // Every correction, recorded (with the exact message) before it is produced, marked produced after
                // Kafka acknowledged it: a restart produces the unmarked ones again, with the same id.
                """
                CREATE TABLE reconcile_corrections (
                    correction_id text PRIMARY KEY,
                    kind text NOT NULL CHECK (kind IN ('notification','refund')),
                    event_type text NOT NULL,
                    credit_key text,
                    topic text NOT NULL,
                    message_key bytea,
                    value bytea NOT NULL,
                    sweep_id bigint NOT NULL,
                    recorded_at_ms bigint NOT NULL,
                    produced_at_ms bigint
                )
                """,
                """
                CREATE INDEX reconcile_corrections_unproduced ON reconcile_corrections (recorded_at_ms)
                    WHERE produced_at_ms IS NULL
                """,
                "CREATE INDEX reconcile_corrections_purchase ON reconcile_corrections (credit_key)",
                // One row per sweep: its figures (what the ledger exports as gauges) and the calls it made (the
                // hourly budget).
                """
                CREATE TABLE reconcile_sweeps (
                    sweep_id bigserial PRIMARY KEY,
                    environment text NOT NULL,
                    dry_run boolean NOT NULL,
                    status text NOT NULL CHECK (status IN ('running','succeeded','failed')),
                    started_at_ms bigint NOT NULL,
                    finished_at_ms bigint,
                    server_api_calls bigint NOT NULL DEFAULT 0,
                    notifications_read bigint NOT NULL DEFAULT 0,
                    purchases_checked bigint NOT NULL DEFAULT 0,
                    purchases_unchecked bigint NOT NULL DEFAULT 0,
                    drift_apple_refunded bigint NOT NULL DEFAULT 0,
                    drift_ledger_debited bigint NOT NULL DEFAULT 0,
                    corrections_recorded bigint NOT NULL DEFAULT 0,
                    corrections_produced bigint NOT NULL DEFAULT 0,
                    budget_exhausted boolean NOT NULL DEFAULT false,
                    error text
                )
                """,
                "CREATE INDEX reconcile_sweeps_started ON reconcile_sweeps (started_at_ms)",
            ]
        ),
        (
            2,
            [
                // A drift the sweep cannot correct (a refund a later REFUND_REVERSED outweighs, a correction the
                // ledger never applied, the ledger debiting what Apple shows paid), recorded once per drift id with
                // why: a later sweep finding the same drift reports nothing new (issue 41, "reconciliation
                // converges").
                """
                CREATE TABLE reconcile_unresolved (
                    drift_id text PRIMARY KEY,
                    credit_key text NOT NULL,
                    direction text NOT NULL
                        CHECK (direction IN ('apple_refunded_ledger_credited','ledger_debited_apple_not_refunded')),
                    reason text NOT NULL,
                    detail text NOT NULL,
                    sweep_id bigint NOT NULL,
                    recorded_at_ms bigint NOT NULL
                )
                """,
                "CREATE INDEX reconcile_unresolved_purchase ON reconcile_unresolved (credit_key)",
                "ALTER TABLE reconcile_sweeps ADD COLUMN drift_unresolved bigint NOT NULL DEFAULT 0",
            ]
        ),
        (
            3,
            [
                // The ledger's text columns compare byte by byte since its schema 11 (`COLLATE "C"`). The sweep's
                // keys follow, so its join of `purchases` with `reconcile_checks` compares in one collation and can
                // use both primary keys (with the database's default on one side, the join takes "C" and the
                // checks' index, built in the default, no longer serves it). Indexes are rebuilt; no table is.
                """
                ALTER TABLE reconcile_checks ALTER COLUMN credit_key TYPE text COLLATE "C"
                """,
                """
                ALTER TABLE reconcile_corrections ALTER COLUMN correction_id TYPE text COLLATE "C",
                    ALTER COLUMN credit_key TYPE text COLLATE "C"
                """,
                """
                ALTER TABLE reconcile_unresolved ALTER COLUMN drift_id TYPE text COLLATE "C",
                    ALTER COLUMN credit_key TYPE text COLLATE "C"
                """,
            ]
        ),
    ]

    public static let versionsTable = "reconcile_schema_migrations"

    public static func newerThanBuild(_ newest: Int64, _ known: Int64) -> String {
        "the reconcile tables are version \(newest), newer than this build's \(known): upgrade receipt-reconcile"
    }
}
