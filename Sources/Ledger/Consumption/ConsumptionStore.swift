import LedgerRules
import Postgres

/// The refund responder's reads and writes: claiming due requests, the facts of their purchases, the outcome of
/// each, consents, and the audit record the API shows.
enum ConsumptionStore {
    /// A recorded request due for an answer (claimed for `leaseMs`: another instance does not take it meanwhile).
    struct DueRequest: Sendable, Equatable {
        var eventId: String
        var creditKey: String
        var transactionId: String
        var environment: String
        var bundleId: String
        var deadlineMs: Int64
        var attempts: Int
        /// The `product_type` the request's transaction named; nil when it named none.
        var productKind: ProductKind? = nil
        /// Apple's `consumptionRequestReason`.
        var reason: String? = nil
        /// Apple's `inAppOwnershipType` of the request's transaction; nil when not recorded (before version 9).
        var inAppOwnershipType: String? = nil

        /// Who paid: `FAMILY_SHARED` is someone else's purchase, which Apple takes no answer for.
        var ownership: Ownership { inAppOwnershipType == "FAMILY_SHARED" ? .familyShared : .purchased }
    }

    /// What the rules need of the purchase now.
    struct PurchaseFacts: Sendable {
        var state: PurchaseState
        /// Units of the purchase the owner used (items only): its lot's spent and covered units.
        var consumed: Int64?
        /// The owner's consent (nil: never recorded).
        var consented: Bool?
    }

    /// Where a request stands; the table's CHECK constraint admits exactly these values.
    enum Status: String, Sendable, Equatable {
        /// Waiting for its next attempt.
        case pending
        /// Apple accepted the answer.
        case answered
        /// Nothing was sent (a reason says why: off, no consent, no owner, past the deadline...).
        case unanswered
        /// The dry run recorded what it would have sent.
        case dryRun = "dry_run"
        /// Apple refused the answer (a 4xx other than 401/429): recorded, not retried.
        case refused
    }

    /// How a request ended, or why it waits (`pending` with a later attempt).
    struct Outcome: Sendable, Equatable {
        var status: Status
        var unansweredReason: String? = nil
        var owner: String? = nil
        var answer: ConsumptionRules.Answer? = nil
        var body: String? = nil
        var appleStatus: Int? = nil
        var appleError: String? = nil
        /// Apple's `errorCode` of its last error answer.
        var appleErrorCode: Int? = nil
        /// Requests sent to Apple so far (`ConsumptionSendResult.requestsSent`).
        var attempts: Int
        /// Set when the request stays pending.
        var nextAttemptAtMs: Int64? = nil
    }

    /// Claims up to `limit` pending requests whose next attempt is due, earliest deadline first, moving their next
    /// attempt `leaseMs` ahead (a responder that dies mid-call leaves them to be taken again then).
    static func claimDue(nowMs: Int64, leaseMs: Int64, limit: Int, on connection: PostgresConnection)
        throws(PostgresError) -> [DueRequest]
    {
        try connection.execute(
            """
            UPDATE consumption_requests SET next_attempt_at_ms = $1::bigint + $2::bigint
            WHERE event_id IN (
                SELECT event_id FROM consumption_requests WHERE status = 'pending' AND next_attempt_at_ms <= $1::bigint
                ORDER BY deadline_ms LIMIT $3::bigint FOR UPDATE SKIP LOCKED)
            RETURNING event_id, credit_key, transaction_id, environment, bundle_id, deadline_ms, attempts, product_type,
                consumption_request_reason, in_app_ownership_type
            """, [.int(nowMs), .int(leaseMs), .int(Int64(limit))]
        ).rows.map { row throws(PostgresError) in
            DueRequest(
                eventId: try row.string("event_id"), creditKey: try row.string("credit_key"),
                transactionId: try row.string("transaction_id"), environment: try row.string("environment"),
                bundleId: try row.string("bundle_id"), deadlineMs: try row.int64("deadline_ms"),
                attempts: Int(try row.int64("attempts")),
                productKind: try row.optionalString("product_type").flatMap(ProductKind.init(rawValue:)),
                reason: try row.optionalString("consumption_request_reason"),
                inAppOwnershipType: try row.optionalString("in_app_ownership_type"))
        }.sorted { ($0.deadlineMs, $0.eventId) < ($1.deadlineMs, $1.eventId) }
    }

    /// The purchase's state, how much of it its owner used and the owner's consent, in one snapshot.
    static func facts(of creditKey: String, on connection: PostgresConnection) throws(PostgresError) -> PurchaseFacts {
        try connection.transaction(isolation: .repeatableRead) { session throws(PostgresError) -> PurchaseFacts in
            guard
                let row = try session.execute(
                    BatchWork.selectPurchases + " WHERE credit_key = $1", [.text(creditKey)]
                ).rows.first
            else { return PurchaseFacts(state: .unknown, consumed: nil, consented: nil) }
            let state = try BatchWork.readState(row, at: BatchWork.PurchasePositions(row.columns), creditKey)
            guard let owner = state.owner else { return PurchaseFacts(state: state, consumed: nil, consented: nil) }
            var consumed: Int64?
            if case .item = state.grant {
                consumed = try session.execute(
                    "SELECT spent + covered AS consumed FROM wallet_lot_states WHERE user_id = $1 AND lot_key = $2",
                    [.text(owner), .text(creditKey)]
                ).rows.first.map { row throws(PostgresError) in try row.int64("consumed") }
            }
            let consented = try session.execute(
                "SELECT consented FROM consents WHERE user_id = $1", [.text(owner)]
            ).rows.first.map { row throws(PostgresError) in try row.bool("consented") }
            return PurchaseFacts(state: state, consumed: consumed, consented: consented)
        }
    }

    /// Writes what happened to a claimed request (only while it is still pending: an answer is recorded once). The
    /// product type the answer went by fills in the request's when its transaction named none.
    @discardableResult
    static func record(_ outcome: Outcome, eventId: String, nowMs: Int64, on connection: PostgresConnection)
        throws(PostgresError) -> Bool
    {
        let answer = outcome.answer
        let result = try connection.execute(
            """
            UPDATE consumption_requests SET status = $2, unanswered_reason = $3, owner = coalesce($4, owner),
                delivery_status = coalesce($5, delivery_status),
                consumption_percentage = coalesce($6, consumption_percentage), rule = coalesce($7, rule),
                refund_preference = coalesce($8, refund_preference), body = coalesce($9, body),
                apple_status = coalesce($10, apple_status), apple_error = $11, attempts = $12,
                next_attempt_at_ms = coalesce($13, next_attempt_at_ms),
                finished_at_ms = CASE WHEN $2::text = 'pending' THEN NULL ELSE $14::bigint END,
                apple_error_code = $15, product_type = coalesce(product_type, $16)
            WHERE event_id = $1 AND status = 'pending'
            """,
            [
                .text(eventId), .text(outcome.status.rawValue), .optional(outcome.unansweredReason),
                .optional(outcome.owner), .optional(answer?.facts.deliveryStatus.rawValue),
                .optional(answer?.facts.consumedPercentage), .optional(answer?.rule.map(Int64.init)),
                .optional(answer?.preference?.rawValue), .optional(outcome.body),
                .optional(outcome.appleStatus.map(Int64.init)), .optional(outcome.appleError),
                .int(Int64(outcome.attempts)), .optional(outcome.nextAttemptAtMs), .int(nowMs),
                .optional(outcome.appleErrorCode.map(Int64.init)), .optional(answer?.facts.productKind?.rawValue),
            ])
        return result.affectedRows == 1
    }

    // MARK: Consent

    static func setConsent(_ userId: String, consented: Bool, nowMs: Int64, on connection: PostgresConnection)
        throws(PostgresError)
    {
        try connection.execute(
            """
            INSERT INTO consents (user_id, consented, updated_at_ms) VALUES ($1, $2, $3)
            ON CONFLICT (user_id) DO UPDATE SET consented = EXCLUDED.consented, updated_at_ms = EXCLUDED.updated_at_ms
            """, [.text(userId), .bool(consented), .int(nowMs)])
    }

    /// nil when the user's consent was never recorded.
    static func consent(_ userId: String, on connection: PostgresConnection) throws(PostgresError)
        -> (consented: Bool, updatedAtMs: Int64)?
    {
        try connection.execute(
            "SELECT consented, updated_at_ms FROM consents WHERE user_id = $1", [.text(userId)]
        ).rows.first.map { row throws(PostgresError) in (try row.bool("consented"), try row.int64("updated_at_ms")) }
    }

    // MARK: Audit and gauges

    /// One request's audit record as the API shows it (JSON text), nil when unknown.
    static func auditJSON(_ eventId: String, on connection: PostgresConnection) throws(PostgresError) -> String? {
        try connection.execute(
            """
            SELECT json_build_object('event_id', event_id, 'credit_key', credit_key, 'transaction_id', transaction_id,
                'environment', environment, 'status', status, 'unanswered_reason', unanswered_reason,
                'owner', owner, 'signed_at_ms', signed_at_ms, 'deadline_ms', deadline_ms,
                'recorded_at_ms', recorded_at_ms, 'finished_at_ms', finished_at_ms, 'attempts', attempts,
                'facts', CASE WHEN delivery_status IS NULL THEN NULL ELSE json_build_object(
                    'delivery_status', delivery_status, 'consumption_percentage', consumption_percentage) END,
                'rule', rule, 'refund_preference', refund_preference,
                'body', CASE WHEN body IS NULL THEN NULL ELSE body::json END,
                'apple_status', apple_status, 'apple_error', apple_error, 'apple_error_code', apple_error_code,
                'product_type', product_type, 'consumption_request_reason', consumption_request_reason,
                'in_app_ownership_type', in_app_ownership_type)::text AS audit
            FROM consumption_requests WHERE event_id = $1
            """, [.text(eventId)]
        ).rows.first.map { row throws(PostgresError) in try row.string("audit") }
    }

    /// Pending requests, and those of them whose deadline is within `warningMs`.
    static func backlog(nowMs: Int64, warningMs: Int64, on connection: PostgresConnection) throws(PostgresError)
        -> (pending: Int64, nearDeadline: Int64)
    {
        let row = try connection.execute(
            """
            SELECT count(*) AS pending, count(*) FILTER (WHERE deadline_ms <= $1::bigint + $2::bigint) AS near_deadline
            FROM consumption_requests WHERE status = 'pending'
            """, [.int(nowMs), .int(warningMs)]
        ).rows[0]
        return (try row.int64("pending"), try row.int64("near_deadline"))
    }
}
