import LedgerRules
import Postgres

/// Purchase rows (read once per batch, locked; written once per batch with array parameters) and dead letters.
extension BatchWork {
    /// A purchase as the batch writes it: its key, its state, and the batch's time.
    struct WrittenPurchase {
        let key: String
        let state: PurchaseState
        let originalTransactionId: String?
        let grant: (kind: String?, name: String?, amount: Int64?)
        let nowMs: Int64
        let untouchedLot: UntouchedLot?

        init(key: String, purchase: CachedPurchase, nowMs: Int64) {
            self.key = key
            untouchedLot = purchase.untouchedLot
            state = purchase.state
            originalTransactionId = purchase.originalTransactionId
            grant = BatchWork.grantTexts(purchase.state.grant)
            self.nowMs = nowMs
        }
    }

    /// A column of `purchases`: its name, and its value in a written purchase.
    struct PurchaseColumn: Sendable {
        enum Value: Sendable {
            case text(@Sendable (WrittenPurchase) -> String?)
            case bigint(@Sendable (WrittenPurchase) -> Int64?)
            case boolean(@Sendable (WrittenPurchase) -> Bool)
        }

        let name: String
        let value: Value
        /// What an `UPDATE` from the arrays' row `u` sets (`name = u.name`, mostly); nil for the key it matches on.
        let assignment: String?

        /// The key: written, and matched on by an update.
        static func key(_ name: String, _ value: Value) -> PurchaseColumn {
            PurchaseColumn(name: name, value: value, assignment: nil)
        }

        var sqlType: String {
            switch value {
            case .text: "text"
            case .bigint: "bigint"
            case .boolean: "boolean"
            }
        }
    }

    /// Every column of `purchases`, in the one order the `COPY` of new purchases, the arrays that update existing
    /// ones and the `SELECT` that reads them follow: a column is added here once, and written and read everywhere.
    static let purchaseTable: [PurchaseColumn] = [
        .key("credit_key", .text { $0.key }),
        .init("status", .text { $0.state.status.rawValue }),
        .init("owner", .text { $0.state.owner }),
        .init("product_id", .text { $0.state.productId }),
        .init("grant_kind", .text { $0.grant.kind }),
        .init("grant_name", .text { $0.grant.name }),
        .init("grant_amount", .bigint { $0.grant.amount }),
        .init("quantity", .bigint { $0.state.quantity }),
        .init("expires_date_ms", .bigint { $0.state.expiresDateMs }),
        .init("amount_credited", .bigint { $0.state.amountCredited }),
        .init("amount_debited", .bigint { $0.state.amountDebited }),
        .init("last_debit", .bigint { $0.state.lastDebit }),
        .init("credited_at_ms", .bigint { $0.state.creditedAtMs }),
        // An update without the id keeps the stored one.
        .init(
            "original_transaction_id", .text { $0.originalTransactionId },
            updatedTo: "coalesce(u.original_transaction_id, p.original_transaction_id)"),
        .init("book", .text { $0.state.book.rawValue }),
        .init("purchase_date_ms", .bigint { $0.state.purchaseDateMs }),
        .init("refused_percentage", .bigint { $0.state.refusedPercentage }),
        .init("last_event_signed_ms", .bigint { $0.state.lastEventSignedMs }),
        .init("upgrade_reported", .boolean { $0.state.upgradeReported }),
        .init("upgraded_at_ms", .bigint { $0.state.upgradedAtMs }),
        .init("upgrade_taken", .bigint { $0.state.upgradeTaken }),
        .init("last_status_signed_ms", .bigint { $0.state.lastStatusSignedMs }),
        // An update that does not know the kind keeps the stored one (migration 7).
        .init(
            "product_type", .text { $0.state.productKind?.rawValue },
            updatedTo: "coalesce(u.product_type, p.product_type)"),
        .init("updated_at_ms", .bigint { $0.nowMs }),
        // The purchase's untouched lot (schema 12): an update that carries none keeps the stored one.
        .init("lot_amount", .bigint { $0.untouchedLot?.amount }, updatedTo: "coalesce(u.lot_amount, p.lot_amount)"),
        .init(
            "lot_added_at_ms", .bigint { $0.untouchedLot?.addedAtMs },
            updatedTo: "coalesce(u.lot_added_at_ms, p.lot_added_at_ms)"),
        .init(
            "lot_history_seq", .bigint { $0.untouchedLot?.historySeq },
            updatedTo: "coalesce(u.lot_history_seq, p.lot_history_seq)"),
        // Whether the lot is still the purchase's (no `wallet_lots` row yet): what the wallet's read of untouched
        // lots finds by index (`purchases_owner` on (owner, lot_untouched), schema 13). Cleared by the lot's first
        // change (`WalletWork.untouchedLotsTaken`); an update that carries no lot keeps the stored flag.
        .init(
            "lot_untouched", .boolean { $0.untouchedLot != nil }, updatedTo: "(u.lot_untouched OR p.lot_untouched)"),
    ]

    static let purchaseColumnNames = purchaseTable.map(\.name).joined(separator: ", ")

    /// Reads every column of `purchaseTable` (`readState` takes them by name).
    static let selectPurchases = "SELECT \(purchaseColumnNames) FROM purchases"

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
        // The keys first, then each looked up and locked on its own, in key order (`LATERAL ... FOR UPDATE` runs
        // once per key, in the keys' order): index probes at every table size. One statement filtering the table
        // by `credit_key = ANY(...) OR ...` was planned as a sequential scan of every purchase until the table was
        // large or analyzed (13 ms per batch of 500 at 30,000 purchases, against 2 ms probing).
        guard !subscriptions.isEmpty else {
            return (
                "SELECT p.* FROM (SELECT unnest($1::text[]) AS key ORDER BY 1) AS k, \(Self.lockedPurchase)",
                [.textArray(Array(wanted))], wanted
            )
        }
        return (
            """
            SELECT p.* FROM (
                SELECT unnest($1::text[]) AS key
                UNION SELECT credit_key FROM purchases
                WHERE original_transaction_id = ANY($2::text[]) AND status IN ('credited','recredited')
                    AND credit_key LIKE '%:period:%' AND expires_date_ms > $3
                ORDER BY 1) AS k, \(Self.lockedPurchase)
            """, [.textArray(Array(wanted)), .textArray(Array(subscriptions)), .int(periodsEndingAfter)], wanted
        )
    }

    /// The purchase of key `k.key`, locked (`purchasesStatement`'s lookup, once per key).
    private static let lockedPurchase =
        "LATERAL (\(selectPurchases) WHERE credit_key = k.key FOR UPDATE) AS p"

    /// Caches the rows `purchasesStatement` read; the keys of `wanted` without a row are cached as never seen.
    mutating func cachePurchases(_ result: PostgresResult, wanted: Set<String>) throws(PostgresError) {
        purchases.reserveCapacity(purchases.count + wanted.count)
        if let columns = result.rows.first?.columns {
            let column = try PurchasePositions(columns)
            for row in result.rows {
                let key = try row.string(column.creditKey)
                guard purchases[key] == nil else { continue }
                purchases[key] = CachedPurchase(
                    state: try Self.readState(row, at: column, key), exists: true,
                    originalTransactionId: row.optionalString(column.originalTransactionId))
            }
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
        let lastEventSignedMs: Int, upgradeReported: Int, upgradedAtMs: Int, upgradeTaken: Int, productType: Int
        let lastStatusSignedMs: Int

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
            productType = try columns.position(of: "product_type")
            lastStatusSignedMs = try columns.position(of: "last_status_signed_ms")
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
            upgradeTaken: try row.int64(column.upgradeTaken),
            productKind: row.optionalString(column.productType).flatMap(ProductKind.init(rawValue:)),
            lastStatusSignedMs: try row.optionalInt64(column.lastStatusSignedMs))
    }

    /// Writes every changed purchase: new ones in one `INSERT` (a concurrent instance inserting the same purchase
    /// makes this batch fail and retry, never overwrite), existing ones in one `UPDATE`, both from arrays.
    mutating func writePurchases() throws(PostgresError) {
        guard !dirtyPurchases.isEmpty else { return }
        var inserted: [WrittenPurchase] = []
        var updated: [WrittenPurchase] = []
        var deleted: [String] = []
        for key in dirtyPurchases.sorted() {
            // One lookup per purchase: read, then updated in place at its index.
            guard let index = purchases.index(forKey: key) else { continue }
            let purchase = purchases.values[index]
            if purchase.state.status == .unseen {
                // Back to never seen (a refund before any claim, then reversed): no row.
                if purchase.exists { deleted.append(key) }
            } else if purchase.exists {
                updated.append(WrittenPurchase(key: key, purchase: purchase, nowMs: nowMs))
            } else {
                inserted.append(WrittenPurchase(key: key, purchase: purchase, nowMs: nowMs))
            }
            purchases.values[index].exists = purchase.state.status != .unseen
            purchases.values[index].untouchedLot = nil
        }
        dirtyPurchases.removeAll(keepingCapacity: true)
        var statements: [(sql: String, parameters: [PostgresValue])] = []
        if inserted.count >= Self.copyThreshold {
            // Many new rows are copied, not inserted from arrays: no array to parse and unnest, multi-row heap
            // inserts (a key another instance inserted first fails the batch with a unique violation, as an INSERT
            // would).
            try session.copy(
                "COPY purchases (\(Self.purchaseColumnNames)) FROM STDIN (FORMAT binary)",
                Self.copyRows(inserted))
        } else if !inserted.isEmpty {
            statements.append((Self.purchasesInsert, Self.rowArrays(inserted)))
        }
        if !updated.isEmpty {
            statements.append((Self.purchasesUpdate, Self.rowArrays(updated)))
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

    /// From this many new purchases in a batch on, they are written by `COPY` (fewer instructions per row in
    /// PostgreSQL); below it by `purchasesInsert` in the batch's write pipeline, because a `COPY` costs two round
    /// trips and a statement's fixed work of its own: with one message per transaction (`LEDGER_BATCH_SIZE=1`, or a
    /// trickle of results) the ledger applied 355-365 results/s with `COPY` and 628/s without it (bench/ledger.sh,
    /// "one per transaction").
    static let copyThreshold = 32

    /// The `INSERT` of new purchases from `rowArrays` (fewer than `copyThreshold`).
    static let purchasesInsert = """
        INSERT INTO purchases (\(purchaseColumnNames)) SELECT * FROM unnest(\(purchaseArrayParameters))
        """

    /// `$1::text[], $2::text[], ...`: one array parameter per column of `purchaseTable` (`rowArrays`).
    static let purchaseArrayParameters = purchaseTable.enumerated()
        .map { index, column in "$\(index + 1)::\(column.sqlType)[]" }.joined(separator: ", ")

    /// The `UPDATE` of existing purchases from `rowArrays`, one array per column of `purchaseTable`.
    static let purchasesUpdate = """
        UPDATE purchases p SET \(purchaseTable.compactMap(\.assignment).joined(separator: ", "))
        FROM unnest(\(purchaseArrayParameters)) AS u(\(purchaseColumnNames))
        WHERE p.credit_key = u.credit_key
        """

    /// `rows` in the order of `purchaseTable`, for `COPY`.
    static func copyRows(_ rows: [WrittenPurchase]) -> PostgresCopyRows {
        // The values alone: copying a whole column per field would retain its name and assignment each time.
        let fields = purchaseTable.map(\.value)
        var copy = PostgresCopyRows(reservingBytes: rows.count * 400)
        for row in rows {
            copy.startRow(fields: fields.count)
            for field in fields {
                switch field {
                case .text(let value): copy.text(value(row))
                case .bigint(let value): copy.int64(value(row))
                case .boolean(let value): copy.bool(value(row))
                }
            }
        }
        return copy
    }

    /// `rows` as one array parameter per column of `purchaseTable`, in its order.
    static func rowArrays(_ rows: [WrittenPurchase]) -> [PostgresValue] {
        purchaseTable.map { column in
            switch column.value {
            case .text(let value): .nullableArray(rows.map(value))
            case .bigint(let value): .intArray(rows.map(value))
            case .boolean(let value): .nullableArray(rows.map { value($0) ? "t" : "f" })
            }
        }
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

extension BatchWork.PurchaseColumn {
    /// A column an update sets to `updatedTo` (the new value, `u.name`, unless told otherwise).
    init(_ name: String, _ value: Value, updatedTo: String? = nil) {
        self.init(name: name, value: value, assignment: "\(name) = \(updatedTo ?? "u.\(name)")")
    }
}
