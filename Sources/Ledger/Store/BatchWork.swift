import LedgerRules
import Postgres

/// One batch's application of messages: decodes each, asks the rules, and writes the decisions. Purchase states are
/// read once per batch (`FOR UPDATE`, so concurrent instances serialize on a purchase) and kept in `purchases`.
struct BatchWork {
    let session: PostgresSession
    let topics: LedgerTopics
    let policy: OwnershipPolicy
    let nowMs: Int64
    var summary = BatchSummary()
    private var purchases: [String: CachedPurchase] = [:]
    /// Writes whose results the batch does not need at once, sent together (one round trip, `pipeline`) before
    /// the next read and at the end of the batch.
    private var writes: [(sql: String, parameters: [PostgresValue], counted: CountedWrite)] = []
    /// Ids and tokens some claim waits for (read at the start of the batch, plus those parked since): linking
    /// any other value cannot resolve a claim, so its link is a deferred write.
    private var awaitedValues: Set<String> = []

    private enum CountedWrite {
        case none, refusedClaim, parkedClaim, deadLetter
    }

    /// A message decoded once, before the batch reads what it touches.
    enum Decoded {
        case result(LedgerResult)
        case event(LedgerEvent)
        case unreadable(String)
    }

    private struct CachedPurchase {
        var state: PurchaseState
        var exists: Bool
    }

    init(session: PostgresSession, topics: LedgerTopics, policy: OwnershipPolicy, nowMs: Int64) {
        self.session = session
        self.topics = topics
        self.policy = policy
        self.nowMs = nowMs
    }

    func decode(_ record: LedgerRecord) -> Decoded {
        do {
            return record.topic == topics.results
                ? .result(try LedgerDecoding.result(record.value)) : .event(try LedgerDecoding.event(record.value))
        } catch {
            return .unreadable(UnreadableMessage.reason(for: error))
        }
    }

    /// Reads, in two statements, the purchases the batch touches (locking them) and which of its ids and tokens
    /// claims wait for.
    mutating func prefetch(_ decoded: [Decoded]) throws(PostgresError) {
        var keys: Set<String> = []
        var linkable: Set<String> = []
        for message in decoded {
            switch message {
            case .result(let result):
                for transaction in result.transactions {
                    keys.insert(transaction.creditKey)
                    if let value = transaction.originalTransactionId { linkable.insert(value) }
                    if let value = transaction.appAccountToken { linkable.insert(value) }
                }
            case .event(let event):
                if let key = event.transaction?.creditKey { keys.insert(key) }
            case .unreadable:
                break
            }
        }
        keys.subtract(purchases.keys)
        if !keys.isEmpty {
            let rows = try session.execute(
                Self.purchaseColumns + " WHERE credit_key = ANY($1::text[]) FOR UPDATE", [.textArray(Array(keys))]
            ).rows
            for row in rows {
                let key = try row.string(12)
                purchases[key] = CachedPurchase(state: try Self.readState(row, key), exists: true)
            }
            for key in keys where purchases[key] == nil {
                purchases[key] = CachedPurchase(state: .unknown, exists: false)
            }
        }
        if !linkable.isEmpty {
            let values: PostgresValue = .textArray(Array(linkable))
            for row in try session.execute(
                """
                SELECT original_transaction_id, app_account_token FROM pending_claims
                WHERE original_transaction_id = ANY($1::text[]) OR app_account_token = ANY($1::text[])
                """, [values]
            ).rows {
                if let value = row.optionalString(0) { awaitedValues.insert(value) }
                if let value = row.optionalString(1) { awaitedValues.insert(value) }
            }
        }
    }

    mutating func apply(_ record: LedgerRecord, _ decoded: Decoded) throws(PostgresError) {
        summary.applied += 1
        let atMs = record.timestampMs ?? nowMs
        let problems: [String]
        switch decoded {
        case .result(let result): problems = try applyResult(result, atMs: atMs)
        case .event(let event): problems = try applyEvent(event, atMs: atMs)
        case .unreadable(let reason): problems = [reason]
        }
        if !problems.isEmpty {
            try deadLetter(record, reason: problems.joined(separator: "; "))
        }
    }

    /// Sends the deferred writes (call before reading what they change, and before the batch commits).
    mutating func flush() throws(PostgresError) {
        guard !writes.isEmpty else { return }
        let pending = writes
        writes.removeAll(keepingCapacity: true)
        let results = try session.pipeline(pending.map { ($0.sql, $0.parameters) })
        for (write, result) in zip(pending, results) {
            switch write.counted {
            case .none: break
            case .refusedClaim: summary.refusedClaims += result.affectedRows
            case .parkedClaim: summary.parkedClaims += result.affectedRows
            case .deadLetter: summary.deadLettered += result.affectedRows
            }
        }
    }

    private mutating func write(_ sql: String, _ parameters: [PostgresValue], counted: CountedWrite = .none)
        throws(PostgresError)
    {
        writes.append((sql, parameters, counted))
        // Bounded: the server's answers to a pipeline wait in socket buffers until it is read.
        if writes.count >= 256 { try flush() }
    }

    /// A write sent with the batch's others (its answer is not needed).
    mutating func deferWrite(_ sql: String, _ parameters: [PostgresValue]) throws(PostgresError) {
        try write(sql, parameters)
    }

    /// A statement whose answer is needed now: the deferred writes go first.
    @discardableResult
    private mutating func read(_ sql: String, _ parameters: [PostgresValue]) throws(PostgresError) -> PostgresResult {
        try flush()
        return try session.execute(sql, parameters)
    }

    // MARK: Results

    /// - Returns: why (parts of) the result could not be applied; empty when all of it was.
    private mutating func applyResult(_ result: LedgerResult, atMs: Int64) throws(PostgresError) -> [String] {
        guard result.outcome == "verified" else { return [] }
        var problems: [String] = []
        for transaction in result.transactions where transaction.shouldCredit {
            guard let productId = transaction.productId, let quantity = transaction.quantity else {
                problems.append("\(transaction.creditKey): creditable without product_id or quantity")
                continue
            }
            var owner = result.owner
            if owner == nil { owner = try resolveOwner(transaction) }
            let claim = CreditClaim(
                source: .result(submissionId: result.submissionId), owner: owner, productId: productId,
                credit: transaction.creditShape, quantity: quantity, expiresDateMs: transaction.expiresDateMs,
                atMs: atMs)
            if let problem = try decide(
                .credit(claim), transaction: transaction,
                claimId: "result:\(result.submissionId):\(transaction.creditKey)")
            {
                problems.append(problem)
            }
            if let resultOwner = result.owner {
                try link(.originalTransactionId, transaction.originalTransactionId, to: resultOwner)
                try link(.appAccountToken, transaction.appAccountToken, to: resultOwner)
            }
        }
        return problems
    }

    // MARK: Events

    private static let moneyTypes: Set<String> = ["credit", "debit", "recredit", "revoke", "subscription_status"]
    private static let otherTypes: Set<String> = ["consumption_request", "test", "info"]

    private mutating func applyEvent(_ event: LedgerEvent, atMs: Int64) throws(PostgresError) -> [String] {
        if Self.otherTypes.contains(event.type) { return [] }
        guard Self.moneyTypes.contains(event.type) else { return ["unknown event type '\(event.type)'"] }
        guard let transaction = event.transaction else { return ["a \(event.type) event without a transaction"] }
        let inserted = try read(
            "INSERT INTO applied_events (event_id, type, credit_key, applied_at_ms) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
            [.text(event.eventId), .text(event.type), .text(transaction.creditKey), .int(nowMs)])
        guard inserted.affectedRows == 1 else {
            summary.duplicateEvents += 1
            return []
        }
        let problem: String?
        switch event.type {
        case "credit":
            guard transaction.shouldCredit else { return [] }
            guard let productId = transaction.productId, let quantity = transaction.quantity else {
                problem = "\(transaction.creditKey): creditable without product_id or quantity"
                break
            }
            let claim = CreditClaim(
                source: .event(eventId: event.eventId), owner: try resolveOwner(transaction), productId: productId,
                credit: transaction.creditShape, quantity: quantity, expiresDateMs: transaction.expiresDateMs,
                atMs: atMs)
            problem = try decide(.credit(claim), transaction: transaction, claimId: "event:\(event.eventId)")
        case "debit":
            problem = try decide(.debit(revocationPercentage: transaction.revocationPercentage), transaction: transaction)
        case "recredit":
            problem = try decide(.recredit, transaction: transaction)
        case "revoke":
            problem = try decide(.revoke, transaction: transaction)
        default:
            problem = try decide(.subscriptionStatus(expiresDateMs: transaction.expiresDateMs), transaction: transaction)
        }
        guard let problem else { return [] }
        // Dead-lettered, not applied: a replay of the same event after a fix must not be taken for a duplicate.
        try write("DELETE FROM applied_events WHERE event_id = $1", [.text(event.eventId)])
        return [problem]
    }

    // MARK: Deciding and writing

    /// Runs the rules for one purchase and writes what they decided.
    /// - Returns: why the input cannot be applied (dead-letter it), or nil.
    private mutating func decide(_ input: LedgerInput, transaction: LedgerTransaction, claimId: String? = nil)
        throws(PostgresError) -> String?
    {
        try decide(
            input, creditKey: transaction.creditKey, originalTransactionId: transaction.originalTransactionId,
            appAccountToken: transaction.appAccountToken, claimId: claimId)
    }

    private mutating func decide(
        _ input: LedgerInput, creditKey: String, originalTransactionId: String?, appAccountToken: String?,
        claimId: String?
    ) throws(PostgresError) -> String? {
        var purchase = try load(creditKey)
        let decision = CreditingRules.apply(input, to: purchase.state, policy: policy)
        for case .unappliable(let reason) in decision.actions { return "\(creditKey): \(reason)" }
        if decision.actions.contains(.waitForOwner), case .credit(let claim) = input {
            // Parked only if it could be applied once its owner is known; otherwise dead-lettered now, while the
            // message is at hand.
            var probe = claim
            probe.owner = "owner"
            for case .unappliable(let reason) in CreditingRules.apply(.credit(probe), to: .unknown, policy: policy).actions {
                return "\(creditKey): \(reason)"
            }
            try park(claim, claimId: claimId ?? creditKey, creditKey: creditKey, originalTransactionId: originalTransactionId, appAccountToken: appAccountToken)
        }
        if decision.state != purchase.state {
            var next = decision.state
            if next.creditedAtMs == nil, next.status == .credited || next.status == .recredited {
                next.creditedAtMs = claimTime(input)
            }
            try save(creditKey, next, exists: purchase.exists, originalTransactionId: originalTransactionId)
            if purchase.state.status == .pendingOwner, next.status != .pendingOwner {
                // Credited (or refused) some other way: what waited for this purchase has nothing left to do.
                try write("DELETE FROM pending_claims WHERE credit_key = $1", [.text(creditKey)])
            }
            purchase.state = next
            purchase.exists = next.status != .none
            purchases[creditKey] = purchase
        }
        for action in decision.actions {
            try perform(action, creditKey: creditKey)
        }
        return nil
    }

    private func claimTime(_ input: LedgerInput) -> Int64 {
        if case .credit(let claim) = input { return claim.atMs }
        return nowMs
    }

    private mutating func perform(_ action: LedgerAction, creditKey: String) throws(PostgresError) {
        switch action {
        case .adjustBalance(let owner, let item, let delta):
            try write(
                """
                INSERT INTO balances (user_id, item, amount) VALUES ($1, $2, $3)
                ON CONFLICT (user_id, item) DO UPDATE SET amount = balances.amount + EXCLUDED.amount
                """, [.text(owner), .text(item), .int(delta)])
        case .grantEntitlement(let owner, let entitlement, let expiresDateMs):
            try write(
                """
                INSERT INTO entitlements (credit_key, user_id, entitlement, expires_date_ms, active)
                VALUES ($1, $2, $3, $4, true)
                ON CONFLICT (credit_key) DO UPDATE SET user_id = EXCLUDED.user_id, entitlement = EXCLUDED.entitlement,
                    expires_date_ms = EXCLUDED.expires_date_ms, active = true
                """, [.text(creditKey), .text(owner), .text(entitlement), .optional(expiresDateMs)])
        case .endEntitlement:
            try write("UPDATE entitlements SET active = false WHERE credit_key = $1", [.text(creditKey)])
        case .setEntitlementExpiry(let expiresDateMs):
            try write(
                "UPDATE entitlements SET expires_date_ms = $2 WHERE credit_key = $1", [.text(creditKey), .int(expiresDateMs)])
        case .recordRefusedClaim(let userId, let submissionId, let atMs):
            try write(
                """
                INSERT INTO refused_claims (credit_key, user_id, submission_id, at_ms) VALUES ($1, $2, $3, $4)
                ON CONFLICT DO NOTHING
                """, [.text(creditKey), .text(userId), .text(submissionId ?? ""), .int(atMs)], counted: .refusedClaim)
        case .recordTransfer:
            summary.transfers += 1
        case .waitForOwner, .unappliable:
            break  // handled in decide
        }
    }

    // MARK: Owners

    private enum LinkKind: String {
        case originalTransactionId = "original_transaction_id"
        case appAccountToken = "app_account_token"
    }

    /// The owner a result tied to the transaction's `original_transaction_id`, else to its `app_account_token`.
    private mutating func resolveOwner(_ transaction: LedgerTransaction) throws(PostgresError) -> String? {
        let original = transaction.originalTransactionId.flatMap { $0.isEmpty ? nil : $0 }
        let token = transaction.appAccountToken.flatMap { $0.isEmpty ? nil : $0 }
        guard original != nil || token != nil else { return nil }
        let rows = try read(
            """
            SELECT user_id FROM owner_links
            WHERE (kind = 'original_transaction_id' AND value = $1) OR (kind = 'app_account_token' AND value = $2)
            ORDER BY kind DESC LIMIT 1
            """, [.optional(original), .optional(token)]
        ).rows
        return rows.first?.optionalString(0)
    }

    /// Ties `value` to `owner` (first claim under `keep`, latest claimant under `transfer`) and applies the claims
    /// that were waiting for it.
    private mutating func link(_ kind: LinkKind, _ value: String?, to owner: String) throws(PostgresError) {
        guard let value, !value.isEmpty else { return }
        let conflict =
            policy == .keep
            ? "DO NOTHING"
            : "DO UPDATE SET user_id = EXCLUDED.user_id WHERE owner_links.user_id <> EXCLUDED.user_id"
        let statement =
            "INSERT INTO owner_links (kind, value, user_id) VALUES ($1, $2, $3) ON CONFLICT (kind, value) " + conflict
        let parameters: [PostgresValue] = [.text(kind.rawValue), .text(value), .text(owner)]
        guard awaitedValues.contains(value) else {
            // No claim waits for this value: whether the link is new does not matter now.
            try write(statement, parameters)
            return
        }
        let changed = try read(statement, parameters)
        guard changed.affectedRows == 1 else { return }
        let column = kind == .originalTransactionId ? "original_transaction_id" : "app_account_token"
        let waiting = try read(
            """
            DELETE FROM pending_claims WHERE \(column) = $1
            RETURNING claim_id, credit_key, source_kind, source_id, product_id, grant_kind, grant_name, grant_amount,
                quantity, expires_date_ms, at_ms, original_transaction_id, app_account_token
            """, [.text(value)]
        ).rows
        let ordered = waiting.sorted { (a: PostgresRow, b: PostgresRow) in
            ((try? a.int64(10)) ?? 0, a.values[0] ?? "") < ((try? b.int64(10)) ?? 0, b.values[0] ?? "")
        }
        for row in ordered {
            let sourceId = try row.string(3)
            let source: CreditClaim.Source =
                try row.string(2) == "event" ? .event(eventId: sourceId) : .result(submissionId: sourceId)
            let claim = CreditClaim(
                source: source, owner: owner, productId: try row.string(4),
                credit: try Self.readShape(row, kind: 5, name: 6, amount: 7), quantity: try row.int64(8),
                expiresDateMs: try row.optionalInt64(9), atMs: try row.int64(10))
            summary.resolvedClaims += 1
            _ = try decide(
                .credit(claim), creditKey: try row.string(1), originalTransactionId: row.optionalString(11),
                appAccountToken: row.optionalString(12), claimId: try row.string(0))
        }
    }

    private mutating func park(
        _ claim: CreditClaim, claimId: String, creditKey: String, originalTransactionId: String?,
        appAccountToken: String?
    ) throws(PostgresError) {
        let (sourceKind, sourceId): (String, String) =
            switch claim.source {
            case .event(let eventId): ("event", eventId)
            case .result(let submissionId): ("result", submissionId)
            }
        let grant = Self.grantColumns(claim.credit)
        if let originalTransactionId { awaitedValues.insert(originalTransactionId) }
        if let appAccountToken { awaitedValues.insert(appAccountToken) }
        try write(
            """
            INSERT INTO pending_claims (claim_id, credit_key, original_transaction_id, app_account_token, source_kind,
                source_id, product_id, grant_kind, grant_name, grant_amount, quantity, expires_date_ms, at_ms)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT DO NOTHING
            """,
            [
                .text(claimId), .text(creditKey), .optional(originalTransactionId), .optional(appAccountToken),
                .text(sourceKind), .text(sourceId), .text(claim.productId), grant.kind, grant.name, grant.amount,
                .int(claim.quantity), .optional(claim.expiresDateMs), .int(claim.atMs),
            ], counted: .parkedClaim)
    }

    // MARK: Purchases

    private mutating func load(_ creditKey: String) throws(PostgresError) -> CachedPurchase {
        if let cached = purchases[creditKey] { return cached }
        let rows = try read(Self.purchaseColumns + " WHERE credit_key = $1 FOR UPDATE", [.text(creditKey)]).rows
        let loaded: CachedPurchase
        if let row = rows.first {
            loaded = CachedPurchase(state: try Self.readState(row, creditKey), exists: true)
        } else {
            loaded = CachedPurchase(state: .unknown, exists: false)
        }
        purchases[creditKey] = loaded
        return loaded
    }

    private static let purchaseColumns = """
        SELECT status, owner, product_id, grant_kind, grant_name, grant_amount, quantity, expires_date_ms,
            amount_credited, amount_debited, last_debit, credited_at_ms, credit_key
        FROM purchases
        """

    private static func readState(_ row: PostgresRow, _ creditKey: String) throws(PostgresError) -> PurchaseState {
        guard let status = PurchaseStatus(rawValue: try row.string(0)) else {
            throw PostgresError(
                sqlState: nil, message: "purchase \(creditKey) has an unknown status", isConnectionBroken: false)
        }
        let grant: Grant? =
            switch try readShape(row, kind: 3, name: 4, amount: 5) {
            case .grant(let grant): grant
            default: nil
            }
        return PurchaseState(
            status: status, owner: row.optionalString(1), productId: row.optionalString(2), grant: grant,
            quantity: try row.int64(6), expiresDateMs: try row.optionalInt64(7),
            amountCredited: try row.int64(8), amountDebited: try row.int64(9), lastDebit: try row.int64(10),
            creditedAtMs: try row.optionalInt64(11))
    }

    private mutating func save(_ creditKey: String, _ state: PurchaseState, exists: Bool, originalTransactionId: String?)
        throws(PostgresError)
    {
        guard state.status != .none else {
            // Back to never seen (a refund before any claim, then reversed): no row.
            if exists {
                try write("DELETE FROM purchases WHERE credit_key = $1", [.text(creditKey)])
            }
            return
        }
        let grant = Self.grantColumns(state.grant.map(CreditShape.grant) ?? .nothing)
        let values: [PostgresValue] = [
            .text(creditKey), .text(state.status.rawValue), .optional(state.owner), .optional(state.productId),
            grant.kind, grant.name, grant.amount, .int(state.quantity), .optional(state.expiresDateMs),
            .int(state.amountCredited), .int(state.amountDebited), .int(state.lastDebit),
            .optional(state.creditedAtMs), .optional(originalTransactionId), .int(nowMs),
        ]
        if exists {
            try write(
                """
                UPDATE purchases SET status = $2, owner = $3, product_id = $4, grant_kind = $5, grant_name = $6,
                    grant_amount = $7, quantity = $8, expires_date_ms = $9, amount_credited = $10,
                    amount_debited = $11, last_debit = $12, credited_at_ms = $13,
                    original_transaction_id = coalesce($14, original_transaction_id), updated_at_ms = $15
                WHERE credit_key = $1
                """, values)
        } else {
            // A plain INSERT: a concurrent instance inserting the same purchase makes this batch fail and retry.
            try write(
                """
                INSERT INTO purchases (credit_key, status, owner, product_id, grant_kind, grant_name, grant_amount,
                    quantity, expires_date_ms, amount_credited, amount_debited, last_debit, credited_at_ms,
                    original_transaction_id, updated_at_ms)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
                """, values)
        }
    }

    private static func grantColumns(_ shape: CreditShape) -> (kind: PostgresValue, name: PostgresValue, amount: PostgresValue) {
        switch shape {
        case .grant(.item(let name, let amount)): (.text("item"), .text(name), .int(amount))
        case .grant(.entitlement(let name)): (.text("entitlement"), .text(name), .null)
        case .nothing, .unknown: (.null, .null, .null)
        }
    }

    private static func readShape(_ row: PostgresRow, kind: Int, name: Int, amount: Int) throws(PostgresError)
        -> CreditShape
    {
        switch row.optionalString(kind) {
        case "item": .grant(.item(name: try row.string(name), amount: try row.int64(amount)))
        case "entitlement": .grant(.entitlement(name: try row.string(name)))
        default: .nothing
        }
    }

    // MARK: Dead letters

    private mutating func deadLetter(_ record: LedgerRecord, reason: String) throws(PostgresError) {
        try write(
            """
            INSERT INTO dead_letters (topic, partition, "offset", reason, raw, recorded_at_ms)
            VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING
            """,
            [
                .text(record.topic), .int(Int64(record.partition)), .int(record.offset), .text(reason),
                .bytes(record.value), .int(nowMs),
            ], counted: .deadLetter)
    }
}
