import LedgerRules
import Postgres

/// One batch's application of messages: decodes each, asks the rules, and writes the decisions. Everything the
/// batch touches is read at its start (`prefetch`: the purchases, locked, the owner links and the awaited ids), the
/// rules run in memory, and the writes go out together: purchases and balances once per batch with array
/// parameters, the rest pipelined.
struct BatchWork {
    let session: PostgresSession
    let topics: LedgerTopics
    let policy: OwnershipPolicy
    let sandboxPolicy: SandboxPolicy
    /// `LEDGER_CLAWBACK`: what a take-back does with the part of a purchase already spent.
    let clawback: ClawbackPolicy
    let nowMs: Int64
    var summary = BatchSummary()
    var purchases: [String: CachedPurchase] = [:]
    /// Purchases whose state changed since they were last written.
    var dirtyPurchases: Set<String> = []
    /// What the batch's decisions do to wallets, in the order decided; applied at the end of the batch
    /// (`applyWalletMoves`), when the wallets they read are locked together, in key order.
    var walletMoves: [PendingWalletMove] = []
    /// Wallets the balances upsert left with debt outstanding (`WalletWork.balancesUpsert`).
    var walletsInDebt: [WalletKey] = []
    /// The credits of wallets the batch did not read (their lots written blind), for `repayDebtsOfWalletsNotRead`.
    var addedLots: [PendingWalletMove] = []
    /// Owner links known in this batch, per environment: `nil` = read and absent.
    var ownerLinks: [LinkKey: String?] = [:]
    /// Declared owners of tokens (lower-cased) known in this batch: `nil` = read and not declared.
    var declaredOwners: [String: String?] = [:]
    /// The wallets' new lots and history rows when a batch writes many (`WalletWork.writes(copyingFrom:)`), copied
    /// by `flush` after its pipeline (a `COPY` cannot run inside one). After the purchases, so that two instances
    /// crediting the same new purchases meet first at the purchases' keys, in key order; and after the balances
    /// upsert, which locks the wallets a credits-only batch did not read: a wallet's history rows are numbered
    /// while its lock is held, so its entries become visible in the order of their numbers.
    var walletCopies: [(sql: String, rows: PostgresCopyRows)] = []
    /// A credits-only batch whose purchases carry their lots and credit entries (schema 12): the balances upsert,
    /// sent by `flush` before the purchases (it locks the wallets), and the purchases whose entries are numbered
    /// then, in the order of the entries.
    var carriedEntries: (balancesUpsert: (sql: String, parameters: [PostgresValue])?, creditKeys: [String])?
    /// Writes whose results the batch does not need at once, sent together (one round trip, `pipeline`) before
    /// the next read and at the end of the batch.
    var writes: [(sql: String, parameters: [PostgresValue], counted: CountedWrite)] = []
    /// Ids and tokens some claim waits for (read at the start of the batch, plus those parked since): linking
    /// any other value cannot resolve a claim.
    var awaitedValues: Set<String> = []
    /// Money events of this batch not applied before (recorded in `applied_events` by `prefetch`); an event id
    /// leaves the set when it is applied, so a second copy in the same batch is a duplicate too.
    var newEvents: Set<String> = []
    /// The app download of each purchase credited in this batch (`credit_key` -> `app_transaction_id`), written
    /// once (`writeAppTransactionIds`).
    var appTransactionIds: [String: String] = [:]

    enum CountedWrite {
        case none, refusedClaim, parkedClaim, deadLetter, consumptionRequest, consentWithdrawal
        /// The balances upsert: its rows are the wallets left in debt.
        case walletsInDebt
    }

    /// A message decoded once, before the batch reads what it touches.
    enum Decoded: Sendable {
        case result(LedgerResult)
        case event(LedgerEvent)
        case unreadable(String)
    }

    struct CachedPurchase {
        var state: PurchaseState
        /// The row exists in the database (insert or update when written).
        var exists: Bool
        var originalTransactionId: String?
        /// The purchase's lot, untouched, for its row to carry (schema 12); nil: the row keeps what it has.
        var untouchedLot: UntouchedLot? = nil

        /// Takes `lot` of `wallet` to carry, if this purchase is its credit (an item of that wallet's owner, book
        /// and item: the reads take the wallet from the row's owner, book and item); false otherwise.
        mutating func carry(_ lot: WalletLot, of wallet: WalletKey) -> Bool {
            guard case .item(let item, _) = state.grant, state.owner == wallet.user, state.book == wallet.book,
                item == wallet.item
            else { return false }
            untouchedLot = UntouchedLot(amount: lot.amount, addedAtMs: lot.addedAtMs)
            return true
        }
    }

    /// A purchase's lot that nothing drew on yet, carried by the purchase row (`lot_amount`, `lot_added_at_ms`,
    /// `lot_history_seq`: `WalletSchema.lotsOnFirstTouch`).
    struct UntouchedLot {
        let amount: Int64
        let addedAtMs: Int64
        /// Its credit's history entry's number, when the lot carries the entry (numbered by `numberCarriedEntries`).
        var historySeq: Int64?
    }

    init(
        session: PostgresSession, topics: LedgerTopics, policy: OwnershipPolicy, sandboxPolicy: SandboxPolicy,
        clawback: ClawbackPolicy = .floor, nowMs: Int64
    ) {
        self.session = session
        self.topics = topics
        self.policy = policy
        self.sandboxPolicy = sandboxPolicy
        self.clawback = clawback
        self.nowMs = nowMs
    }

    static func decode(_ record: LedgerRecord, topics: LedgerTopics) -> Decoded {
        do {
            return record.topic == topics.results
                ? .result(try LedgerDecoding.result(record.value)) : .event(try LedgerDecoding.event(record.value))
        } catch {
            return .unreadable(error.description)
        }
    }

    /// Reads what the batch touches, in a fixed lock order (so two instances never wait on each other in a cycle):
    /// the ids and tokens its transactions carry (advisory locks: a claim parked for an owner and the result that
    /// links that owner, or the backend's declaration of that token, serialize, whichever commits first), then the
    /// purchases (`FOR UPDATE`, by key), with the credited periods of the same subscriptions (what an upgrade
    /// replaces), the owner links of those ids and tokens in every environment, the tokens' declared owners, and
    /// which of them claims wait for.
    /// Called once per batch; kept out of line so that profiles (bench/ledger-callgrind.sh) name it.
    @inline(never)
    mutating func prefetch(_ decoded: some Collection<Decoded>) throws(PostgresError) {
        // Sized for a transaction per message (a result's usual shape): no set grows by rehashing its keys.
        var keys = Set<String>(minimumCapacity: decoded.count)
        var linkable = Set<String>(minimumCapacity: decoded.count)
        // The ids whose owner the batch may look up: tokens, subscriptions' ids, and the ids of transactions whose
        // message names no owner (a consumable's id with a named owner is never looked up: its link is written
        // only when a claim waits for it, which the pending-claims read tells).
        var lookedUp: Set<String> = []
        var tokens: Set<String> = []
        var subscriptions: Set<String> = []
        var earliestPeriod = Int64.max
        func touch(_ transaction: LedgerTransaction, ownerNamed: Bool) {
            keys.insert(transaction.creditKey)
            if let value = transaction.originalTransactionId, !value.isEmpty {
                linkable.insert(value)
                if !ownerNamed || transaction.isPeriod { lookedUp.insert(value) }
            }
            if let value = transaction.appAccountToken, !value.isEmpty {
                linkable.insert(value)
                lookedUp.insert(value)
                tokens.insert(value)  // canonical already (LedgerTransaction)
            }
            if transaction.isPeriod, let original = transaction.originalTransactionId, !original.isEmpty {
                subscriptions.insert(original)
                earliestPeriod = min(earliestPeriod, transaction.purchaseDateMs ?? Int64.min)
            }
        }
        var events: [(id: String, type: String, creditKey: String)] = []
        for message in decoded {
            switch message {
            case .result(let result):
                for transaction in result.transactions { touch(transaction, ownerNamed: result.owner != nil) }
            case .event(let event):
                if let transaction = event.transaction { touch(transaction, ownerNamed: false) }
                if let transaction = event.transaction, let kind = LedgerEventKind.of(event.type), kind.movesMoney {
                    events.append((event.eventId, event.type, transaction.creditKey))
                }
            case .unreadable: break
            }
        }
        // One round trip: the statements of a pipeline run in order, so the locks are held before the reads.
        var statements: [(sql: String, parameters: [PostgresValue])] = []
        let values: PostgresValue = .textArray(Array(linkable))
        if !linkable.isEmpty {
            statements.append(
                (
                    """
                    SELECT pg_advisory_xact_lock(\(LedgerSchema.linkLockNamespace), h)
                    FROM (SELECT DISTINCT hashtext(v) AS h FROM unnest($1::text[]) AS v ORDER BY 1) AS l
                    """, [values]
                ))
        }
        let purchasesRead = purchasesStatement(
            keys: keys, subscriptions: subscriptions, periodsEndingAfter: earliestPeriod)
        if let purchasesRead { statements.append((purchasesRead.sql, purchasesRead.parameters)) }
        if !lookedUp.isEmpty {
            statements.append(
                (
                    "SELECT kind, environment, value, user_id FROM owner_links WHERE value = ANY($1::text[])",
                    [.textArray(Array(lookedUp))]
                ))
        }
        if !tokens.isEmpty {
            statements.append(
                (
                    """
                    SELECT app_account_token, user_id FROM declared_account_tokens
                    WHERE app_account_token = ANY($1::text[])
                    """, [.textArray(Array(tokens))]
                ))
        }
        if !linkable.isEmpty {
            statements.append(
                (
                    """
                    SELECT original_transaction_id, app_account_token FROM pending_claims
                    WHERE original_transaction_id = ANY($1::text[]) OR app_account_token = ANY($1::text[])
                    """, [values]
                ))
        }
        let eventsRecord = recordEventsStatement(events)
        if let eventsRecord { statements.append(eventsRecord) }
        var results = try session.pipeline(statements)[...]
        if !linkable.isEmpty { results = results.dropFirst() }
        if let purchasesRead {
            try cachePurchases(results.removeFirst(), wanted: purchasesRead.wanted)
        }
        if !lookedUp.isEmpty {
            for value in lookedUp {
                for environment in PurchaseEnvironment.allCases {
                    for kind in [LinkKind.originalTransactionId, .appAccountToken] {
                        ownerLinks[LinkKey(kind: kind, environment: environment, value: value)] = .some(nil)
                    }
                }
            }
            // Each loop finds its columns by name once, from the columns its rows share.
            let links = results.removeFirst().rows
            if let columns = links.first?.columns {
                let kindColumn = try columns.position(of: "kind")
                let environmentColumn = try columns.position(of: "environment")
                let valueColumn = try columns.position(of: "value")
                let userColumn = try columns.position(of: "user_id")
                for row in links {
                    guard let kind = LinkKind(rawValue: try row.string(kindColumn)),
                        let environment = PurchaseEnvironment(rawValue: try row.string(environmentColumn))
                    else { continue }
                    let owner = try row.string(userColumn)
                    ownerLinks[LinkKey(kind: kind, environment: environment, value: try row.string(valueColumn))] =
                        .some(owner)
                }
            }
        }
        if !tokens.isEmpty {
            for token in tokens { declaredOwners[token] = .some(nil) }
            let declared = results.removeFirst().rows
            if let columns = declared.first?.columns {
                let tokenColumn = try columns.position(of: "app_account_token")
                let userColumn = try columns.position(of: "user_id")
                for row in declared { declaredOwners[try row.string(tokenColumn)] = .some(try row.string(userColumn)) }
            }
        }
        if !linkable.isEmpty {
            let claims = results.removeFirst().rows
            if let columns = claims.first?.columns {
                let idColumn = try columns.position(of: "original_transaction_id")
                let tokenColumn = try columns.position(of: "app_account_token")
                for row in claims {
                    if let value = row.optionalString(idColumn) { awaitedValues.insert(value) }
                    if let value = row.optionalString(tokenColumn) { awaitedValues.insert(value) }
                }
            }
        }
        if eventsRecord != nil {
            let recorded = results.removeFirst().rows
            if let columns = recorded.first?.columns {
                let eventColumn = try columns.position(of: "event_id")
                for row in recorded { newEvents.insert(try row.string(eventColumn)) }
            }
        }
    }

    /// The statement that records the batch's money events in `applied_events`; those already there (not returned)
    /// are duplicates.
    private func recordEventsStatement(_ events: [(id: String, type: String, creditKey: String)])
        -> (sql: String, parameters: [PostgresValue])?
    {
        guard !events.isEmpty else { return nil }
        var seen: Set<String> = []
        let unique = events.filter { seen.insert($0.id).inserted }
        return (
            """
            INSERT INTO applied_events (event_id, type, credit_key, applied_at_ms)
            SELECT e, t, k, $4 FROM unnest($1::text[], $2::text[], $3::text[]) AS u(e, t, k)
            ON CONFLICT DO NOTHING RETURNING event_id
            """,
            [.textArray(unique.map(\.id)), .textArray(unique.map(\.type)), .textArray(unique.map(\.creditKey)), .int(nowMs)]
        )
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

    /// Sends the deferred writes (call before reading what they change, and before the batch commits): the
    /// changed purchases first (other tables refer to them), then the pipeline, then the wallets' copies.
    mutating func flush() throws(PostgresError) {
        try numberCarriedEntries()
        try writePurchases()
        defer { walletCopies.removeAll() }
        if !writes.isEmpty { try sendWrites() }
        for copy in walletCopies { try session.copy(copy.sql, copy.rows) }
    }

    private mutating func sendWrites() throws(PostgresError) {
        let pending = writes
        writes.removeAll(keepingCapacity: true)
        let results = try session.pipeline(pending.map { ($0.sql, $0.parameters) })
        for (write, result) in zip(pending, results) {
            switch write.counted {
            case .none: break
            case .refusedClaim: summary.refusedClaims += result.affectedRows
            case .parkedClaim: summary.parkedClaims += result.affectedRows
            case .deadLetter: summary.deadLettered += result.affectedRows
            case .consumptionRequest: summary.consumptionRequests += result.affectedRows
            case .consentWithdrawal: summary.consentsWithdrawn += result.affectedRows
            case .walletsInDebt: try recordWalletsInDebt(result)
            }
        }
    }

    /// The wallets the balances upsert (`result`) left with debt outstanding.
    mutating func recordWalletsInDebt(_ result: PostgresResult) throws(PostgresError) {
        for row in result.rows {
            guard let book = Book(rawValue: try row.string("book")) else { continue }
            walletsInDebt.append(WalletKey(user: try row.string("user_id"), book: book, item: try row.string("item")))
        }
    }

    /// The end of the batch: every deferred write, then the wallets (lots, balances, history), once per batch.
    mutating func finish() throws(PostgresError) {
        try writeAppTransactionIds()
        try applyWalletMoves()
        try flush()
        try repayDebtsOfWalletsNotRead()
    }

    /// Queues one statement recording the app downloads of this batch's credited purchases (in key order).
    mutating func writeAppTransactionIds() throws(PostgresError) {
        guard !appTransactionIds.isEmpty else { return }
        let rows = appTransactionIds.sorted { $0.key < $1.key }
        appTransactionIds.removeAll()
        try write(
            """
            INSERT INTO purchase_app_transactions (credit_key, app_transaction_id)
            SELECT * FROM unnest($1::text[], $2::text[])
            ON CONFLICT (credit_key) DO UPDATE SET app_transaction_id = EXCLUDED.app_transaction_id
            """, [.textArray(rows.map(\.key)), .textArray(rows.map(\.value))])
    }

    mutating func write(_ sql: String, _ parameters: [PostgresValue], counted: CountedWrite = .none)
        throws(PostgresError)
    {
        writes.append((sql, parameters, counted))
        // Bounded: the server's answers to a pipeline wait in socket buffers until it is read.
        if writes.count >= 256 { try flush() }
    }

    /// A statement whose answer is needed now: the deferred writes go first.
    @discardableResult
    mutating func read(_ sql: String, _ parameters: [PostgresValue]) throws(PostgresError) -> PostgresResult {
        try flush()
        return try session.execute(sql, parameters)
    }
}
