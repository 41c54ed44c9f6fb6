import LedgerRules
import Postgres

/// Purchase rows (read once per batch, locked; written once per batch with array parameters) and dead letters.
extension BatchWork {
    static let purchaseColumns = """
        SELECT credit_key, status, owner, product_id, grant_kind, grant_name, grant_amount, quantity, expires_date_ms,
            amount_credited, amount_debited, last_debit, credited_at_ms, original_transaction_id, book,
            purchase_date_ms, refused_percentage, last_event_signed_ms, upgrade_reported, upgraded_at_ms, upgrade_taken
        FROM purchases
        """

    /// A purchase from the batch's cache, else read (and locked) now.
    mutating func load(_ creditKey: String) throws(PostgresError) -> CachedPurchase {
        if let cached = purchases[creditKey] { return cached }
        try flush()
        try loadPurchases(keys: [creditKey], subscriptions: [], periodsEndingAfter: .max)
        return purchases[creditKey] ?? CachedPurchase(state: .unknown, exists: false, originalTransactionId: nil)
    }

    /// Reads and locks, in key order, the purchases `keys` and the periods in force of the subscriptions
    /// `subscriptions` that end after `periodsEndingAfter` (what an upgrade may replace); keys without a row are
    /// cached as never seen.
    mutating func loadPurchases(keys: Set<String>, subscriptions: Set<String>, periodsEndingAfter: Int64)
        throws(PostgresError)
    {
        guard let statement = purchasesStatement(keys: keys, subscriptions: subscriptions, periodsEndingAfter: periodsEndingAfter)
        else { return }
        try cachePurchases(try session.execute(statement.sql, statement.parameters), wanted: statement.wanted)
    }

    /// The statement that reads and locks, in key order, the purchases `keys` not cached yet and the periods in
    /// force of `subscriptions` ending after `periodsEndingAfter`; nil when there is nothing to read.
    func purchasesStatement(keys: Set<String>, subscriptions: Set<String>, periodsEndingAfter: Int64)
        -> (sql: String, parameters: [PostgresValue], wanted: Set<String>)?
    {
        let wanted = keys.subtracting(purchases.keys)
        guard !wanted.isEmpty || !subscriptions.isEmpty else { return nil }
        return (
            Self.purchaseColumns + """
                 WHERE credit_key = ANY($1::text[])
                    OR (original_transaction_id = ANY($2::text[]) AND status IN ('credited','recredited')
                        AND credit_key LIKE '%:period:%' AND expires_date_ms > $3)
                ORDER BY credit_key FOR UPDATE
                """, [.textArray(Array(wanted)), .textArray(Array(subscriptions)), .int(periodsEndingAfter)], wanted
        )
    }

    /// Caches the rows `purchasesStatement` read; the keys of `wanted` without a row are cached as never seen.
    mutating func cachePurchases(_ result: PostgresResult, wanted: Set<String>) throws(PostgresError) {
        for row in result.rows {
            let key = try row.string(0)
            guard purchases[key] == nil else { continue }
            purchases[key] = CachedPurchase(
                state: try Self.readState(row, key), exists: true, originalTransactionId: row.optionalString(13))
        }
        for key in wanted where purchases[key] == nil {
            purchases[key] = CachedPurchase(state: .unknown, exists: false, originalTransactionId: nil)
        }
    }

    static func readState(_ row: PostgresRow, _ creditKey: String) throws(PostgresError) -> PurchaseState {
        guard let status = PurchaseStatus(rawValue: try row.string(1)), let book = Book(rawValue: try row.string(14))
        else {
            throw PostgresError(
                sqlState: nil, message: "purchase \(creditKey) has an unknown status or book", isConnectionBroken: false)
        }
        let grant: Grant? =
            switch try readShape(row, kind: 4, name: 5, amount: 6) {
            case .grant(let grant): grant
            default: nil
            }
        return PurchaseState(
            status: status, owner: row.optionalString(2), productId: row.optionalString(3), grant: grant,
            quantity: try row.int64(7), expiresDateMs: try row.optionalInt64(8),
            amountCredited: try row.int64(9), amountDebited: try row.int64(10), lastDebit: try row.int64(11),
            creditedAtMs: try row.optionalInt64(12), book: book, purchaseDateMs: try row.optionalInt64(15),
            refusedPercentage: try row.optionalInt64(16), lastEventSignedMs: try row.optionalInt64(17),
            upgradeReported: try row.bool(18), upgradedAtMs: try row.optionalInt64(19), upgradeTaken: try row.int64(20))
    }

    /// Writes every changed purchase: new ones in one `INSERT` (a concurrent instance inserting the same purchase
    /// makes this batch fail and retry, never overwrite), existing ones in one `UPDATE`, both from arrays.
    mutating func writePurchases() throws(PostgresError) {
        guard !dirtyPurchases.isEmpty else { return }
        var inserted: [(String, CachedPurchase)] = []
        var updated: [(String, CachedPurchase)] = []
        var deleted: [String] = []
        for key in dirtyPurchases.sorted() {
            guard let purchase = purchases[key] else { continue }
            if purchase.state.status == .none {
                // Back to never seen (a refund before any claim, then reversed): no row.
                if purchase.exists { deleted.append(key) }
            } else if purchase.exists {
                updated.append((key, purchase))
            } else {
                inserted.append((key, purchase))
            }
            purchases[key]?.exists = purchase.state.status != .none
        }
        dirtyPurchases.removeAll(keepingCapacity: true)
        let columns = """
            credit_key, status, owner, product_id, grant_kind, grant_name, grant_amount, quantity, expires_date_ms,
            amount_credited, amount_debited, last_debit, credited_at_ms, original_transaction_id, book,
            purchase_date_ms, refused_percentage, last_event_signed_ms, upgrade_reported, upgraded_at_ms,
            upgrade_taken, updated_at_ms
            """
        let arrays = """
            unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[],
                $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::text[],
                $15::text[], $16::bigint[], $17::bigint[], $18::bigint[], $19::boolean[], $20::bigint[],
                $21::bigint[], $22::bigint[])
            """
        if !inserted.isEmpty {
            // New rows are copied, not inserted from arrays: no array to parse and unnest, multi-row heap inserts
            // (a key another instance inserted first fails the batch with a unique violation, as an INSERT would).
            try session.copy("COPY purchases (\(columns)) FROM STDIN (FORMAT binary)", copyRows(inserted))
        }
        var statements: [(sql: String, parameters: [PostgresValue])] = []
        if !updated.isEmpty {
            statements.append(
                (
                    """
                    UPDATE purchases p SET status = u.status, owner = u.owner, product_id = u.product_id,
                        grant_kind = u.grant_kind, grant_name = u.grant_name, grant_amount = u.grant_amount,
                        quantity = u.quantity, expires_date_ms = u.expires_date_ms,
                        amount_credited = u.amount_credited, amount_debited = u.amount_debited,
                        last_debit = u.last_debit, credited_at_ms = u.credited_at_ms,
                        original_transaction_id = coalesce(u.original_transaction_id, p.original_transaction_id),
                        book = u.book, purchase_date_ms = u.purchase_date_ms,
                        refused_percentage = u.refused_percentage, last_event_signed_ms = u.last_event_signed_ms,
                        upgrade_reported = u.upgrade_reported, upgraded_at_ms = u.upgraded_at_ms,
                        upgrade_taken = u.upgrade_taken, updated_at_ms = u.updated_at_ms
                    FROM \(arrays) AS u(\(columns))
                    WHERE p.credit_key = u.credit_key
                    """, rowArrays(updated)
                ))
        }
        if !deleted.isEmpty {
            // Back to never seen: what referred to the purchase goes with it (a refused claim of an unreadable
            // shape, say), so the delete cannot fail the batch forever.
            for table in ["refused_claims", "entitlements", "purchases"] {
                statements.append(("DELETE FROM \(table) WHERE credit_key = ANY($1::text[])", [.textArray(deleted)]))
            }
        }
        _ = try session.pipeline(statements)
    }

    /// `rows` in the order of `writePurchases`'s columns, for `COPY`.
    private func copyRows(_ rows: [(String, CachedPurchase)]) -> PostgresCopyRows {
        var copy = PostgresCopyRows(reservingBytes: rows.count * 400)
        for (key, purchase) in rows {
            let state = purchase.state
            let grant = Self.grantTexts(state.grant)
            copy.startRow(fields: 22)
            copy.text(key)
            copy.text(state.status.rawValue)
            copy.text(state.owner)
            copy.text(state.productId)
            copy.text(grant.kind)
            copy.text(grant.name)
            copy.int64(grant.amount)
            copy.int64(state.quantity)
            copy.int64(state.expiresDateMs)
            copy.int64(state.amountCredited)
            copy.int64(state.amountDebited)
            copy.int64(state.lastDebit)
            copy.int64(state.creditedAtMs)
            copy.text(purchase.originalTransactionId)
            copy.text(state.book.rawValue)
            copy.int64(state.purchaseDateMs)
            copy.int64(state.refusedPercentage)
            copy.int64(state.lastEventSignedMs)
            copy.bool(state.upgradeReported)
            copy.int64(state.upgradedAtMs)
            copy.int64(state.upgradeTaken)
            copy.int64(nowMs)
        }
        return copy
    }

    private func rowArrays(_ rows: [(String, CachedPurchase)]) -> [PostgresValue] {
        func text(_ value: (PurchaseState) -> String?) -> PostgresValue { .nullableArray(rows.map { value($0.1.state) }) }
        func int(_ value: (PurchaseState) -> Int64?) -> PostgresValue { .intArray(rows.map { value($0.1.state) }) }
        let grants = rows.map { Self.grantTexts($0.1.state.grant) }
        return [
            .textArray(rows.map(\.0)), text { $0.status.rawValue }, text(\.owner), text(\.productId),
            .nullableArray(grants.map(\.kind)), .nullableArray(grants.map(\.name)), .intArray(grants.map(\.amount)),
            int(\.quantity), int(\.expiresDateMs), int(\.amountCredited), int(\.amountDebited), int(\.lastDebit),
            int(\.creditedAtMs), .nullableArray(rows.map(\.1.originalTransactionId)), text { $0.book.rawValue },
            int(\.purchaseDateMs), int(\.refusedPercentage), int(\.lastEventSignedMs),
            .nullableArray(rows.map { $0.1.state.upgradeReported ? "t" : "f" }), int(\.upgradedAtMs),
            int { $0.upgradeTaken }, .intArray(rows.map { _ in nowMs }),
        ]
    }

    static func grantTexts(_ grant: Grant?) -> (kind: String?, name: String?, amount: Int64?) {
        switch grant {
        case .item(let name, let amount): ("item", name, amount)
        case .entitlement(let name): ("entitlement", name, nil)
        case nil: (nil, nil, nil)
        }
    }

    static func grantColumns(_ shape: CreditShape) -> (kind: PostgresValue, name: PostgresValue, amount: PostgresValue) {
        let grant: Grant? = if case .grant(let known) = shape { known } else { nil }
        let texts = grantTexts(grant)
        return (.optional(texts.kind), .optional(texts.name), .optional(texts.amount))
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
