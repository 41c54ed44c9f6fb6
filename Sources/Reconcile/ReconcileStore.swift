import LedgerRules
import Postgres
import ReceiptModel

/// A correction, as recorded before it is produced: the exact message, so producing it again after a crash sends
/// the same bytes under the same id.
public struct Correction: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// Apple's `signedPayload` again on `NOTIFICATIONS_TOPIC` (the id is its `notificationUUID`).
        case notification
        /// A `debit` event on `EVENTS_TOPIC` (`reconcile:refund:<transactionId>:<revocationDateMs>`).
        case refund
    }

    public var id: String
    public var kind: Kind
    /// The event type the ledger will apply (`debit`, `credit`, ...).
    public var eventType: String
    public var creditKey: String?
    public var topic: String
    public var key: [UInt8]?
    public var value: [UInt8]

    /// The record's headers: a made-up event carries the verifier's `event-id` and `event-type`; a notification
    /// record none (as the ingest and the backfill write them).
    public var headers: [(name: String, value: String)] {
        switch kind {
        case .notification: []
        case .refund: [(MessageHeaders.eventId, id), (MessageHeaders.eventType, eventType)]
        }
    }
}

/// A credited purchase whose refund history is due.
struct ReconcileCandidate: Sendable, Equatable {
    var creditKey: String
    /// The ledger's view of it (status, last money event).
    var ledger: ReconcileRules.LedgerPurchase
    /// The transaction id Get Refund History is asked with (any of the customer's: the original one).
    var lookupId: String
}

/// The sweep's progress through Get Notification History of one environment.
struct NotificationCursor: Sendable, Equatable {
    var windowStartMs: Int64
    var windowEndMs: Int64?
    var paginationToken: String?
}

/// The sweep's figures, written to its `reconcile_sweeps` row at every commit.
public struct SweepFigures: Sendable, Equatable {
    public var serverAPICalls: Int64 = 0
    public var notificationsRead: Int64 = 0
    public var purchasesChecked: Int64 = 0
    public var purchasesUnchecked: Int64 = 0
    public var driftAppleRefunded: Int64 = 0
    public var driftLedgerDebited: Int64 = 0
    /// Of the new drift, what the sweep could not correct and recorded (`reconcile_unresolved`), both directions.
    public var driftUnresolved: Int64 = 0
    public var correctionsRecorded: Int64 = 0
    public var correctionsProduced: Int64 = 0
    public var budgetExhausted = false

    public init() {}
}

/// The sweep's reads of the ledger's tables (never written) and its own tables (`ReconcileSchema`).
struct ReconcileStore {
    let connection: PostgresConnection

    /// The ledger's tables the sweep reads must exist (the ledger creates them at its first start).
    func checkLedgerTables() throws(PostgresError) -> Bool {
        let row = try connection.execute(
            "SELECT to_regclass('purchases') IS NOT NULL AND to_regclass('applied_events') IS NOT NULL AS present"
        ).rows[0]
        return try row.bool("present")
    }

    /// Session-level: held until the connection closes (a crashed sweep's lock goes with its connection).
    func tryLockSweep() throws(PostgresError) -> Bool {
        try connection.execute("SELECT pg_try_advisory_lock($1) AS locked", [.int(ReconcileSchema.sweepLockKey)]).rows[0]
            .bool("locked")
    }

    func startSweep(environment: String, dryRun: Bool, nowMs: Int64) throws(PostgresError) -> Int64 {
        try connection.execute(
            """
            INSERT INTO reconcile_sweeps (environment, dry_run, status, started_at_ms)
            VALUES ($1, $2, 'running', $3) RETURNING sweep_id
            """, [.text(environment), .bool(dryRun), .int(nowMs)]
        ).rows[0].int64("sweep_id")
    }

    /// Server API calls the sweeps that started in the last hour made (this one included).
    func callsInLastHour(nowMs: Int64) throws(PostgresError) -> Int64 {
        try connection.execute(
            "SELECT coalesce(sum(server_api_calls), 0) AS calls FROM reconcile_sweeps WHERE started_at_ms > $1",
            [.int(nowMs - 3_600_000)]
        ).rows[0].int64("calls")
    }

    /// Corrections recorded and not yet acknowledged by Kafka (an earlier sweep stopped between the two).
    func unproducedCorrections() throws(PostgresError) -> [Correction] {
        let rows = try connection.execute(
            """
            SELECT correction_id, kind, event_type, credit_key, topic, message_key, value FROM reconcile_corrections
            WHERE produced_at_ms IS NULL ORDER BY recorded_at_ms, correction_id
            """
        ).rows
        var corrections: [Correction] = []
        for row in rows {
            corrections.append(
                Correction(
                    id: try row.string("correction_id"),
                    kind: Correction.Kind(rawValue: try row.string("kind")) ?? .notification,
                    eventType: try row.string("event_type"), creditKey: try row.optionalString("credit_key"),
                    topic: try row.string("topic"), key: try row.optionalBytes("message_key"),
                    value: try row.bytes("value")))
        }
        return corrections
    }

    func markProduced(_ ids: [String], nowMs: Int64) throws(PostgresError) {
        guard !ids.isEmpty else { return }
        try connection.execute(
            "UPDATE reconcile_corrections SET produced_at_ms = $2 WHERE correction_id = ANY($1::text[])",
            [.textArray(ids), .int(nowMs)])
    }

    func cursor(environment: String) throws(PostgresError) -> NotificationCursor? {
        guard
            let row = try connection.execute(
                "SELECT window_start_ms, window_end_ms, pagination_token FROM reconcile_cursors WHERE environment = $1",
                [.text(environment)]
            ).rows.first
        else { return nil }
        return NotificationCursor(
            windowStartMs: try row.int64("window_start_ms"), windowEndMs: try row.optionalInt64("window_end_ms"),
            paginationToken: try row.optionalString("pagination_token"))
    }

    /// Which of `ids` the ledger has (applied or parked money events, recorded consumption requests, applied
    /// `RESCIND_CONSENT`s) or a correction was recorded for. A table of a ledger older than its version is absent.
    func knownEventIds(_ ids: [String]) throws(PostgresError) -> Set<String> {
        guard !ids.isEmpty else { return [] }
        let present = try connection.execute(
            """
            SELECT to_regclass('consumption_requests') IS NOT NULL AS requests,
                to_regclass('consent_rescinds') IS NOT NULL AS rescinds
            """
        ).rows[0]
        var union = ""
        if try present.bool("requests") {
            union += " UNION SELECT event_id FROM consumption_requests WHERE event_id = ANY($1::text[])"
        }
        if try present.bool("rescinds") {
            union += " UNION SELECT event_id FROM consent_rescinds WHERE event_id = ANY($1::text[])"
        }
        let rows = try connection.execute(
            """
            SELECT event_id FROM applied_events WHERE event_id = ANY($1::text[])
            UNION SELECT correction_id FROM reconcile_corrections WHERE correction_id = ANY($1::text[])
            """ + union, [.textArray(ids)]
        ).rows
        var known: Set<String> = []
        for row in rows { known.insert(try row.string("event_id")) }
        return known
    }

    /// Purchases whose `REFUND` notification a sweep sent again since `sinceMs`: its own event debits them. An
    /// older one that still left the purchase credited (the verifier refused it, say) explains nothing any more.
    func debitedByNotificationCorrections(_ creditKeys: [String], sinceMs: Int64) throws(PostgresError)
        -> Set<String>
    {
        guard !creditKeys.isEmpty else { return [] }
        var keys: Set<String> = []
        for row in try connection.execute(
            """
            SELECT credit_key FROM reconcile_corrections
            WHERE kind = 'notification' AND event_type = 'debit' AND credit_key = ANY($1::text[])
                AND recorded_at_ms >= $2
            """, [.textArray(creditKeys), .int(sinceMs)]
        ).rows {
            keys.insert(try row.string("credit_key"))
        }
        return keys
    }

    /// Purchases of `environment` the ledger credited at or after `sinceMs`, the never-checked first, then the
    /// longest unchecked, then the oldest credit.
    func candidates(environment: String, creditedSinceMs: Int64, limit: Int) throws(PostgresError)
        -> [ReconcileCandidate]
    {
        let prefix = "apple:\(environment.lowercased()):"
        let rows = try connection.execute(
            """
            SELECT p.credit_key, p.status, p.last_event_signed_ms, p.original_transaction_id FROM purchases p
            LEFT JOIN reconcile_checks c ON c.credit_key = p.credit_key
            WHERE p.credited_at_ms >= $1 AND starts_with(p.credit_key, $2)
            ORDER BY c.checked_at_ms NULLS FIRST, p.credited_at_ms, p.credit_key
            LIMIT $3
            """, [.int(creditedSinceMs), .text(prefix), .int(Int64(limit))]
        ).rows
        var candidates: [ReconcileCandidate] = []
        for row in rows {
            let key = try row.string("credit_key")
            guard let status = PurchaseStatus(rawValue: try row.string("status")) else { continue }
            // A period's key names its period, not a transaction: the original id asks for the customer.
            let fromKey = key.dropFirst(prefix.count)
            let lookup =
                try row.optionalString("original_transaction_id")
                ?? (fromKey.hasPrefix("period:") ? nil : String(fromKey))
            guard let lookup, !lookup.isEmpty else { continue }
            candidates.append(
                ReconcileCandidate(
                    creditKey: key,
                    ledger: ReconcileRules.LedgerPurchase(
                        status, lastMoneyEventSignedMs: try row.optionalInt64("last_event_signed_ms")),
                    lookupId: lookup))
        }
        return candidates
    }

    /// Candidates never checked (what the budget left waiting).
    func uncheckedCount(environment: String, creditedSinceMs: Int64) throws(PostgresError) -> Int64 {
        try connection.execute(
            """
            SELECT count(*) AS unchecked FROM purchases p LEFT JOIN reconcile_checks c ON c.credit_key = p.credit_key
            WHERE p.credited_at_ms >= $1 AND starts_with(p.credit_key, $2) AND c.credit_key IS NULL
            """, [.int(creditedSinceMs), .text("apple:\(environment.lowercased()):")]
        ).rows[0].int64("unchecked")
    }

    /// The ledger's view of `creditKeys` (the keys it does not know are absent).
    func purchases(_ creditKeys: [String]) throws(PostgresError) -> [String: ReconcileRules.LedgerPurchase] {
        guard !creditKeys.isEmpty else { return [:] }
        var purchases: [String: ReconcileRules.LedgerPurchase] = [:]
        for row in try connection.execute(
            "SELECT credit_key, status, last_event_signed_ms FROM purchases WHERE credit_key = ANY($1::text[])",
            [.textArray(creditKeys)]
        ).rows {
            guard let status = PurchaseStatus(rawValue: try row.string("status")) else { continue }
            purchases[try row.string("credit_key")] = ReconcileRules.LedgerPurchase(
                status, lastMoneyEventSignedMs: try row.optionalInt64("last_event_signed_ms"))
        }
        return purchases
    }

    /// Where the corrections `ids` stand: recorded (when), or applied by the ledger (its `applied_events` has the
    /// id, also of a correction whose record is gone); absent: never made.
    func correctionStates(_ ids: [String]) throws(PostgresError) -> [String: ReconcileRules.CorrectionState] {
        guard !ids.isEmpty else { return [:] }
        var states: [String: ReconcileRules.CorrectionState] = [:]
        for row in try connection.execute(
            """
            SELECT coalesce(c.correction_id, a.event_id) AS id, c.recorded_at_ms, a.event_id IS NOT NULL AS applied
            FROM (SELECT correction_id, recorded_at_ms FROM reconcile_corrections
                  WHERE correction_id = ANY($1::text[])) AS c
            FULL JOIN (SELECT event_id FROM applied_events WHERE event_id = ANY($1::text[])) AS a
                ON a.event_id = c.correction_id
            """, [.textArray(ids)]
        ).rows {
            let id = try row.string("id")
            if try row.bool("applied") {
                states[id] = .applied
            } else if let recordedAtMs = try row.optionalInt64("recorded_at_ms") {
                states[id] = .recorded(atMs: recordedAtMs)
            }
        }
        return states
    }

    /// Which of the drift ids `ids` an earlier sweep recorded as unresolved.
    func recordedUnresolved(_ ids: [String]) throws(PostgresError) -> Set<String> {
        guard !ids.isEmpty else { return [] }
        var recorded: Set<String> = []
        for row in try connection.execute(
            "SELECT drift_id FROM reconcile_unresolved WHERE drift_id = ANY($1::text[])", [.textArray(ids)]
        ).rows {
            recorded.insert(try row.string("drift_id"))
        }
        return recorded
    }

    /// One page's outcome in one transaction: its corrections recorded (an id recorded before keeps its first
    /// message), the drifts it could not correct (once per drift id), the purchases it checked, the cursor moved,
    /// the sweep's figures.
    /// - Returns: the corrections newly recorded (those to produce).
    func commitPage(
        sweepId: Int64, corrections: [Correction], checked: [String], unresolved: [ReconcileRules.Unresolved] = [],
        environment: String, cursor: NotificationCursor?, figures: SweepFigures, nowMs: Int64
    ) throws(PostgresError) -> [Correction] {
        try connection.transaction { session throws(PostgresError) -> [Correction] in
            var recorded: [Correction] = []
            for correction in corrections {
                let inserted = try session.execute(
                    """
                    INSERT INTO reconcile_corrections (correction_id, kind, event_type, credit_key, topic, message_key,
                        value, sweep_id, recorded_at_ms)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (correction_id) DO NOTHING
                    """,
                    [
                        .text(correction.id), .text(correction.kind.rawValue), .text(correction.eventType),
                        .optional(correction.creditKey), .text(correction.topic),
                        correction.key.map { PostgresValue.bytes($0) } ?? PostgresValue.null,
                        .bytes(correction.value), .int(sweepId), .int(nowMs),
                    ]
                ).affectedRows
                if inserted > 0 { recorded.append(correction) }
            }
            if !unresolved.isEmpty {
                try session.execute(
                    """
                    INSERT INTO reconcile_unresolved (drift_id, credit_key, direction, reason, detail, sweep_id,
                        recorded_at_ms)
                    SELECT d, k, dir, r, t, $6, $7
                    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(d, k, dir, r, t)
                    ON CONFLICT (drift_id) DO NOTHING
                    """,
                    [
                        .textArray(unresolved.map(\.driftId)), .textArray(unresolved.map(\.creditKey)),
                        .textArray(unresolved.map(\.direction.rawValue)), .textArray(unresolved.map(\.reason.rawValue)),
                        .textArray(unresolved.map(\.detail)), .int(sweepId), .int(nowMs),
                    ])
            }
            if !checked.isEmpty {
                try session.execute(
                    """
                    INSERT INTO reconcile_checks (credit_key, checked_at_ms) SELECT k, $2 FROM unnest($1::text[]) AS k
                    ON CONFLICT (credit_key) DO UPDATE SET checked_at_ms = EXCLUDED.checked_at_ms
                    """, [.textArray(checked), .int(nowMs)])
            }
            if let position = cursor {
                try session.execute(
                    """
                    INSERT INTO reconcile_cursors (environment, window_start_ms, window_end_ms, pagination_token,
                        updated_at_ms)
                    VALUES ($1, $2, $3, $4, $5)
                    ON CONFLICT (environment) DO UPDATE SET window_start_ms = EXCLUDED.window_start_ms,
                        window_end_ms = EXCLUDED.window_end_ms, pagination_token = EXCLUDED.pagination_token,
                        updated_at_ms = EXCLUDED.updated_at_ms
                    """,
                    [
                        .text(environment), .int(position.windowStartMs), .optional(position.windowEndMs),
                        .optional(position.paginationToken), .int(nowMs),
                    ])
            }
            var counted = figures
            counted.correctionsRecorded += Int64(recorded.count)
            try Self.write(counted, sweepId: sweepId, in: session)
            return recorded
        }
    }

    /// The sweep's figures (and, when it ended, how).
    func updateSweep(
        _ sweepId: Int64, figures: SweepFigures, finished: (status: String, atMs: Int64, error: String?)? = nil
    ) throws(PostgresError) {
        try connection.withSession { session throws(PostgresError) in
            try Self.write(figures, sweepId: sweepId, in: session)
            if let finished {
                try session.execute(
                    "UPDATE reconcile_sweeps SET status = $2, finished_at_ms = $3, error = $4 WHERE sweep_id = $1",
                    [.int(sweepId), .text(finished.status), .int(finished.atMs), .optional(finished.error)])
            }
        }
    }

    private static func write(_ figures: SweepFigures, sweepId: Int64, in session: PostgresSession)
        throws(PostgresError)
    {
        try session.execute(
            """
            UPDATE reconcile_sweeps SET server_api_calls = $2, notifications_read = $3, purchases_checked = $4,
                purchases_unchecked = $5, drift_apple_refunded = $6, drift_ledger_debited = $7,
                corrections_recorded = $8, corrections_produced = $9, budget_exhausted = $10, drift_unresolved = $11
            WHERE sweep_id = $1
            """,
            [
                .int(sweepId), .int(figures.serverAPICalls), .int(figures.notificationsRead),
                .int(figures.purchasesChecked), .int(figures.purchasesUnchecked), .int(figures.driftAppleRefunded),
                .int(figures.driftLedgerDebited), .int(figures.correctionsRecorded), .int(figures.correctionsProduced),
                .bool(figures.budgetExhausted), .int(figures.driftUnresolved),
            ])
    }
}
