import LedgerRules
import Postgres

/// Purchase rows (read once per batch, locked; written once per batch with array parameters) and dead letters.
extension BatchWork {
    static let selectPurchases = """
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
            Self.selectPurchases + """
                 WHERE credit_key = ANY($1::text[])
                    OR (original_transaction_id = ANY($2::text[]) AND status IN ('credited','recredited')
                        AND credit_key LIKE '%:period:%' AND expires_date_ms > $3)
                ORDER BY credit_key FOR UPDATE
                """, [.textArray(Array(wanted)), .textArray(Array(subscriptions)), .int(periodsEndingAfter)], wanted
        )
    }

    /// Caches the rows `purchasesStatement` read; the keys of `wanted` without a row are cached as never seen.
    mutating func cachePurchases(_ result: PostgresResult, wanted: Set<String>) throws(PostgresError) {
        let column = try PurchasePositions(result.columnIndex)
        for row in result.rows {
            let key = try row.string(column.creditKey)
            guard purchases[key] == nil else { continue }
            purchases[key] = CachedPurchase(
                state: try Self.readState(row, at: column, key), exists: true,
                originalTransactionId: row.optionalString(column.originalTransactionId))
        }
        for key in wanted where purchases[key] == nil {
            purchases[key] = CachedPurchase(state: .unknown, exists: false, originalTransactionId: nil)
        }
    }

    /// Where the columns of a purchase stand in a result of `selectPurchases`: found by name once per result, and
    /// every row read at them.
    struct PurchasePositions {
        let creditKey: Int, status: Int, owner: Int, productId: Int, grant: GrantPositions, quantity: Int
        let expiresDateMs: Int, amountCredited: Int, amountDebited: Int, lastDebit: Int, creditedAtMs: Int
        let originalTransactionId: Int, book: Int, purchaseDateMs: Int, refusedPercentage: Int
        let lastEventSignedMs: Int, upgradeReported: Int, upgradedAtMs: Int, upgradeTaken: Int

        init(_ columns: PostgresColumns) throws(PostgresError) {
            creditKey = try columns.position(of: "credit_key")
            status = try columns.position(of: "status")
            owner = try columns.position(of: "owner")
            productId = try columns.position(of: "product_id")
            grant = try GrantPositions(columns)
            quantity = try columns.position(of: "quantity")
            expiresDateMs = try columns.position(of: "expires_date_ms")
            amountCredited = try columns.position(of: "amount_credited")
            amountDebited = try columns.position(of: "amount_debited")
            lastDebit = try columns.position(of: "last_debit")
            creditedAtMs = try columns.position(of: "credited_at_ms")
            originalTransactionId = try columns.position(of: "original_transaction_id")
            book = try columns.position(of: "book")
            purchaseDateMs = try columns.position(of: "purchase_date_ms")
            refusedPercentage = try columns.position(of: "refused_percentage")
            lastEventSignedMs = try columns.position(of: "last_event_signed_ms")
            upgradeReported = try columns.position(of: "upgrade_reported")
            upgradedAtMs = try columns.position(of: "upgraded_at_ms")
            upgradeTaken = try columns.position(of: "upgrade_taken")
        }
    }

    /// The state of the purchase `creditKey` in `row`, a row of `selectPurchases` whose columns stand at `column`.
    static func readState(_ row: PostgresRow, at column: PurchasePositions, _ creditKey: String) throws(PostgresError)
        -> PurchaseState
    {
        guard let status = PurchaseStatus(rawValue: try row.string(column.status)),
            let book = Book(rawValue: try row.string(column.book))
        else {
            throw PostgresError(
                sqlState: nil, message: "purchase \(creditKey) has an unknown status or book", isConnectionBroken: false)
        }
        let grant: Grant? =
            switch try readShape(row, at: column.grant) {
            case .grant(let grant): grant
            default: nil
            }
        return PurchaseState(
            status: status, owner: row.optionalString(column.owner), productId: row.optionalString(column.productId),
            grant: grant, quantity: try row.int64(column.quantity),
            expiresDateMs: try row.optionalInt64(column.expiresDateMs),
            amountCredited: try row.int64(column.amountCredited), amountDebited: try row.int64(column.amountDebited),
            lastDebit: try row.int64(column.lastDebit), creditedAtMs: try row.optionalInt64(column.creditedAtMs),
            book: book, purchaseDateMs: try row.optionalInt64(column.purchaseDateMs),
            refusedPercentage: try row.optionalInt64(column.refusedPercentage),
            lastEventSignedMs: try row.optionalInt64(column.lastEventSignedMs),
            upgradeReported: try row.bool(column.upgradeReported),
            upgradedAtMs: try row.optionalInt64(column.upgradedAtMs),
            upgradeTaken: try row.int64(column.upgradeTaken))
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

    /// Where a row's grant stands (`grant_kind`, `grant_name`, `grant_amount`, in `purchases` and `pending_claims`).
    struct GrantPositions {
        let kind: Int, name: Int, amount: Int

        init(_ columns: PostgresColumns) throws(PostgresError) {
            kind = try columns.position(of: "grant_kind")
            name = try columns.position(of: "grant_name")
            amount = try columns.position(of: "grant_amount")
        }
    }

    static func readShape(_ row: PostgresRow, at column: GrantPositions) throws(PostgresError) -> CreditShape {
        switch row.optionalString(column.kind) {
        case "item": .grant(.item(name: try row.string(column.name), amount: try row.int64(column.amount)))
        case "entitlement": .grant(.entitlement(name: try row.string(column.name)))
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
