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
    var purchases: [String: CachedPurchase] = [:]
    /// Writes whose results the batch does not need at once, sent together (one round trip, `pipeline`) before
    /// the next read and at the end of the batch.
    var writes: [(sql: String, parameters: [PostgresValue], counted: CountedWrite)] = []
    /// Ids and tokens some claim waits for (read at the start of the batch, plus those parked since): linking
    /// any other value cannot resolve a claim, so its link is a deferred write.
    var awaitedValues: Set<String> = []

    enum CountedWrite {
        case none, refusedClaim, parkedClaim, deadLetter
    }

    /// A message decoded once, before the batch reads what it touches.
    enum Decoded {
        case result(LedgerResult)
        case event(LedgerEvent)
        case unreadable(String)
    }

    struct CachedPurchase {
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

    mutating func write(_ sql: String, _ parameters: [PostgresValue], counted: CountedWrite = .none)
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
    mutating func read(_ sql: String, _ parameters: [PostgresValue]) throws(PostgresError) -> PostgresResult {
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
}
