import LedgerRules
import Postgres

/// Spends and grants applied together in one database transaction, in arrival order: the wallets they name are
/// locked first (their balances rows, in key order, the lock order of the Kafka consumer's batches too), their lots
/// with units remaining, their debts and the requests already recorded under the keys are read in one round trip,
/// `WalletRules` decides each in memory, and everything is written in one more (lots, attributions, balances,
/// history, the requests with their answers), then committed once.
enum WalletBatch {
    /// Applies `requests` within the caller's transaction and returns their answers, in order.
    /// - Throws: `PostgresError`; the caller rolls back (nothing of the batch is kept) and may apply it again: a
    ///   key recorded meanwhile by another instance (a unique violation) is then read and answered as a replay.
    static func apply(_ requests: [WalletRequest], in session: PostgresSession, nowMs: Int64) throws(PostgresError)
        -> [WalletAnswer]
    {
        let keys = Array(Set(requests.map(\.wallet))).sorted()
        var ids: [WalletRequest.RequestId] = []
        var seenIds: Set<WalletRequest.RequestId> = []
        for request in requests where seenIds.insert(request.id).inserted { ids.append(request.id) }
        var statements = WalletWork.readStatements(keys)
        statements.append(
            (
                """
                SELECT r.user_id, r.idempotency_key, r.operation, r.book, r.item, r.amount, r.note, r.status, r.body
                FROM unnest($1::text[], $2::text[]) AS k(u, key)
                JOIN wallet_requests r ON r.user_id = k.u AND r.idempotency_key = k.key
                """, [.textArray(ids.map(\.user)), .textArray(ids.map(\.key))]
            ))
        let results = try session.pipeline(statements)
        var work = WalletWork()
        try work.cacheRead(keys, results[0..<3])
        var stored = try storedRequests(results[3])
        var recorded: [(request: WalletRequest, answer: WalletAnswer)] = []
        var answers: [WalletAnswer] = []
        answers.reserveCapacity(requests.count)
        for request in requests {
            if let earlier = stored[request.id] {
                answers.append(
                    request.isSame(as: earlier)
                        ? WalletAnswer(status: earlier.status, body: earlier.body, replayed: true, outcome: .replayed)
                        : WalletAnswer.error(
                            422, "idempotency_key_reused",
                            "this Idempotency-Key was used for another \(earlier.operation.rawValue) (other content); use a new key for a new request",
                            outcome: .keyReused))
                continue
            }
            let answer = decide(request, in: &work, nowMs: nowMs)
            answers.append(answer)
            // A grant the balance cannot hold changed nothing and is not an answer to keep (the key stays unused).
            guard answer.outcome != .overflow else { continue }
            recorded.append((request, answer))
            stored[request.id] = StoredRequest(
                operation: request.operation, book: request.book, item: request.item, amount: request.amount,
                note: request.note, status: answer.status, body: answer.body)
        }
        var writes = work.writeStatements()
        if !recorded.isEmpty {
            writes.append(
                (
                    """
                    INSERT INTO wallet_requests (user_id, idempotency_key, operation, book, item, amount, note, status,
                        body, at_ms)
                    SELECT u, k, o, b, i, a, n, s, t, $10 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[],
                        $5::text[], $6::bigint[], $7::text[], $8::int[], $9::text[]) AS r(u, k, o, b, i, a, n, s, t)
                    """,
                    [
                        .textArray(recorded.map(\.request.userId)), .textArray(recorded.map(\.request.idempotencyKey)),
                        .textArray(recorded.map(\.request.operation.rawValue)),
                        .textArray(recorded.map(\.request.book.rawValue)), .textArray(recorded.map(\.request.item)),
                        .intArray(recorded.map(\.request.amount)), .nullableArray(recorded.map(\.request.note)),
                        .textArray(recorded.map { String($0.answer.status) }), .textArray(recorded.map(\.answer.body)),
                        .int(nowMs),
                    ]
                ))
        }
        _ = try session.pipeline(writes)
        return answers
    }

    /// One request applied to its wallet in memory, with its history and attribution.
    private static func decide(_ request: WalletRequest, in work: inout WalletWork, nowMs: Int64) -> WalletAnswer {
        let key = request.wallet
        switch request.operation {
        case .spend:
            var outcome: Result<[LotShare], WalletRules.Refusal> = .success([])
            work.update(key) { wallet in outcome = WalletRules.spend(request.amount, from: &wallet) }
            let wallet = work.wallet(key)
            switch outcome {
            case .failure(let refusal):
                return WalletAnswer.refused(refusal, wallet: wallet)
            case .success(let shares):
                for share in shares { work.spends.append((request.userId, request.idempotencyKey, share)) }
                work.history.append(
                    WalletHistoryEntry(
                        wallet: key, kind: .spend, key: request.idempotencyKey, creditKey: nil, amount: request.amount,
                        balanceChange: -request.amount, note: request.note, atMs: nowMs))
                return WalletAnswer.spent(
                    request, balance: wallet.balance,
                    attribution: shares.map { ($0, wallet.lots[$0.lot]?.kind ?? .purchase) })
            }
        case .grant:
            let lot = WalletLot(key: "grant:\(request.idempotencyKey)", kind: .grant, amount: request.amount, addedAtMs: nowMs)
            var repaid: [(clawback: String, amount: Int64)]?
            work.update(key) { wallet in repaid = WalletRules.add(lot, to: &wallet) }
            guard let repaid else {
                return WalletAnswer.error(
                    422, "amount_overflow",
                    "the balance of \(request.item) would pass \(Int64.max) units; nothing was granted", outcome: .overflow)
            }
            work.history.append(
                WalletHistoryEntry(
                    wallet: key, kind: .grant, key: request.idempotencyKey, creditKey: nil, amount: request.amount,
                    balanceChange: request.amount, note: request.note, atMs: nowMs))
            work.recordRepayments(repaid, of: key, atMs: nowMs)
            return WalletAnswer.granted(
                request, balance: work.wallet(key).balance, debtRepaid: repaid.reduce(0) { $0 + $1.amount })
        }
    }

    private static func storedRequests(_ result: PostgresResult) throws(PostgresError)
        -> [WalletRequest.RequestId: StoredRequest]
    {
        var stored: [WalletRequest.RequestId: StoredRequest] = [:]
        for row in result.rows {
            guard let operation = WalletRequest.Operation(rawValue: try row.string("operation")),
                let book = Book(rawValue: try row.string("book"))
            else {
                throw PostgresError(sqlState: nil, message: "a stored wallet request is unreadable", isConnectionBroken: false)
            }
            stored[WalletRequest.RequestId(user: try row.string("user_id"), key: try row.string("idempotency_key"))] =
                StoredRequest(
                    operation: operation, book: book, item: try row.string("item"), amount: try row.int64("amount"),
                    note: try row.optionalString("note"), status: Int(try row.int64("status")),
                    body: try row.string("body"))
        }
        return stored
    }
}
