import LedgerRules
import Postgres

/// Purchase rows (read once per batch, written as decided) and dead letters.
extension BatchWork {
    mutating func load(_ creditKey: String) throws(PostgresError) -> CachedPurchase {
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

    static let purchaseColumns = """
        SELECT status, owner, product_id, grant_kind, grant_name, grant_amount, quantity, expires_date_ms,
            amount_credited, amount_debited, last_debit, credited_at_ms, credit_key
        FROM purchases
        """

    static func readState(_ row: PostgresRow, _ creditKey: String) throws(PostgresError) -> PurchaseState {
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

    mutating func save(_ creditKey: String, _ state: PurchaseState, exists: Bool, originalTransactionId: String?)
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

    static func grantColumns(_ shape: CreditShape) -> (kind: PostgresValue, name: PostgresValue, amount: PostgresValue) {
        switch shape {
        case .grant(.item(let name, let amount)): (.text("item"), .text(name), .int(amount))
        case .grant(.entitlement(let name)): (.text("entitlement"), .text(name), .null)
        case .nothing, .unknown: (.null, .null, .null)
        }
    }

    static func readShape(_ row: PostgresRow, kind: Int, name: Int, amount: Int) throws(PostgresError)
        -> CreditShape
    {
        switch row.optionalString(kind) {
        case "item": .grant(.item(name: try row.string(name), amount: try row.int64(amount)))
        case "entitlement": .grant(.entitlement(name: try row.string(name)))
        default: .nothing
        }
    }

    // MARK: Dead letters

    mutating func deadLetter(_ record: LedgerRecord, reason: String) throws(PostgresError) {
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
