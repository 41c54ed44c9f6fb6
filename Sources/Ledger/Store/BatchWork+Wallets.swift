import LedgerRules
import Postgres

/// The wallets' side of a batch: the crediting decisions' wallet movements, applied at the end of the batch with
/// `WalletRules` and written once (`WalletWork`).
///
/// A batch whose movements are credits only (every results batch) reads nothing: each credit is a new lot, inserted
/// (copied, with the history rows, when the batch has many: `WalletWork.writes(copyingFrom:)`), and the balances
/// upsert adds it, as before the wallet. Only when that upsert finds a wallet
/// with debt outstanding is that wallet read (it is locked by then) and the debt repaid from the batch's new lots.
/// A batch with a take-back or a reversal first locks every wallet it touches, in key order (the lock order of spends
/// too), reads them, and applies all its movements in order in memory.
extension BatchWork {
    /// A movement waiting for the end of the batch.
    struct PendingWalletMove {
        let wallet: WalletKey
        let movement: WalletMovement
        let creditKey: String
        /// A take-back's clawback key (the refund's `event_id`, `upgrade:<credit_key>`,
        /// `refund-before-credit:<credit_key>`); a reversal's history key (the recredit's `event_id`).
        let key: String
        /// A credit's lot time (the purchase's credit time).
        let atMs: Int64
    }

    mutating func queueWalletMoves(
        _ movements: [WalletMovement], creditKey: String, state: PurchaseState, eventId: String?
    ) {
        for movement in movements {
            let key: String
            switch movement {
            case .addPurchase: key = creditKey
            case .takeBack(_, _, _, .upgrade): key = "upgrade:\(creditKey)"
            case .takeBack(_, _, _, .refund) where eventId == nil: key = "refund-before-credit:\(creditKey)"
            case .takeBack, .reverseRefunds: key = eventId ?? "\(creditKey):\(nowMs):\(walletMoves.count)"
            }
            walletMoves.append(
                PendingWalletMove(
                    wallet: WalletKey(user: movement.owner, book: state.book, item: movement.item), movement: movement,
                    creditKey: creditKey, key: key, atMs: state.creditedAtMs ?? nowMs))
        }
    }

    /// Applies the batch's wallet movements in order and queues their writes.
    mutating func applyWalletMoves() throws(PostgresError) {
        guard !walletMoves.isEmpty else { return }
        let moves = walletMoves
        walletMoves.removeAll()
        var work = WalletWork()
        if moves.contains(where: { $0.movement.readsWallet }) {
            let keys = Array(Set(moves.map(\.wallet))).sorted()
            let reversing = moves.compactMap { move -> String? in
                if case .reverseRefunds = move.movement { return move.creditKey }
                return nil
            }
            let takingBack = moves.compactMap { move -> (user: String, key: String)? in
                if case .takeBack = move.movement { return (move.wallet.user, move.key) }
                return nil
            }
            try flush()
            try work.cacheRead(
                keys,
                try session.pipeline(WalletWork.readStatements(keys, reversing: reversing, takingBack: takingBack))[...])
        }
        for move in moves {
            try apply(move, to: &work)
        }
        var writes = work.writes(copyingFrom: Self.copyThreshold, purchasesCarryLots: true)
        if !carry(writes.untouchedLots) {
            writes = work.writes(copyingFrom: Self.copyThreshold)
        }
        var statements = writes.statements[...]
        if writes.untouchedLotsCarryEntries {
            // The entries are numbered while the wallets are locked, as the lots' rows were (`flush`).
            let upsert = statements.firstIndex { $0.sql == WalletWork.balancesUpsert }.map { statements.remove(at: $0) }
            carriedEntries = (upsert, writes.untouchedLots.map(\.lot.key))
        }
        for statement in statements {
            try write(
                statement.sql, statement.parameters,
                counted: statement.sql == WalletWork.balancesUpsert ? .walletsInDebt : .none)
        }
        // Queued after the statements: the next flush copies them after the balances upsert has locked the wallets.
        walletCopies += writes.copies
        addedLots = moves.filter { !work.wasRead($0.wallet) }
    }

    /// Gives each untouched lot to its purchase row to write (`CachedPurchase.untouchedLot`), if every one's purchase
    /// is cached by this batch and of the lot's wallet (the reads take the wallet from the row's owner, book and
    /// item); otherwise gives none (and takes back any given) and answers false: the lots are written as rows.
    private mutating func carry(_ lots: [(wallet: WalletKey, lot: WalletLot)]) -> Bool {
        for (given, (wallet, lot)) in lots.enumerated() {
            // One access per purchase, in place: checked and given together.
            guard purchases[lot.key]?.carry(lot, of: wallet) == true else {
                for (_, earlier) in lots.prefix(given) { purchases[earlier.key]?.untouchedLot = nil }
                return false
            }
            dirtyPurchases.insert(lot.key)
        }
        return true
    }

    /// Sends a credits-only batch's balances upsert (locking its wallets, in key order) and takes a number from the
    /// history's sequence for each credit entry its purchases carry, in the entries' order: the numbers are taken
    /// while the wallets are locked and in the order the entries were made, as the lots' own default took them
    /// before schema 12 (a wallet's entries become visible in the order of their numbers).
    mutating func numberCarriedEntries() throws(PostgresError) {
        guard let carried = carriedEntries else { return }
        carriedEntries = nil
        var statements: [(sql: String, parameters: [PostgresValue])] = []
        if let upsert = carried.balancesUpsert { statements.append(upsert) }
        statements.append((Self.historyNumbers, [.int(Int64(carried.creditKeys.count))]))
        let results = try session.pipeline(statements)
        if carried.balancesUpsert != nil { try recordWalletsInDebt(results[0]) }
        guard let row = results[results.count - 1].rows.first else {
            throw PostgresError(
                sqlState: nil, message: "the history's sequence gave no number", isConnectionBroken: false)
        }
        var numbers = try row.int64Array(0)
        numbers.sort()
        guard numbers.count == carried.creditKeys.count else {
            throw PostgresError(
                sqlState: nil, message: "the history's sequence gave \(numbers.count) numbers for \(carried.creditKeys.count)",
                isConnectionBroken: false)
        }
        for (key, seq) in zip(carried.creditKeys, numbers) { purchases[key]?.untouchedLot?.historySeq = seq }
    }

    /// `$1` numbers from the history's sequence, in one array (one row to send and read, not one per number; the
    /// caller sorts them). The sequence is looked up once (a materialized CTE): in a subquery the planner pulls up,
    /// `pg_get_serial_sequence` ran once per number, ~30,000 instructions each.
    static let historyNumbers = """
        WITH s AS MATERIALIZED (SELECT pg_get_serial_sequence('wallet_history', 'seq')::regclass AS id)
        SELECT array_agg(nextval(s.id)) AS seqs FROM s, generate_series(1, $1::int)
        """

    private mutating func apply(_ move: PendingWalletMove, to work: inout WalletWork) throws(PostgresError) {
        let wallet = move.wallet
        switch move.movement {
        case .addPurchase(_, _, let amount):
            var repaid: [(clawback: String, amount: Int64)]?
            work.update(wallet) { wallet in
                repaid = WalletRules.add(
                    WalletLot(key: move.key, kind: .purchase, amount: amount, addedAtMs: move.atMs), to: &wallet)
            }
            guard let repaid else { throw Self.balanceOverflow(wallet) }
            work.history.append(
                WalletHistoryEntry(
                    wallet: wallet, kind: .credit, key: move.creditKey, creditKey: move.creditKey, amount: amount,
                    balanceChange: amount, atMs: move.atMs))
            work.recordRepayments(repaid, of: wallet, atMs: nowMs)
        case .takeBack(_, _, let units, let kind):
            // Taken once: the wallet was read with every clawback this batch's take-backs would record, so one
            // recorded before (in an earlier batch, or earlier in this one) takes and writes nothing again.
            guard work.wallet(wallet).clawbacks[move.key] == nil else { return }
            var outcome: WalletRules.TakeBack?
            let policy = clawback
            let atMs = nowMs
            work.update(wallet) { wallet in
                outcome = WalletRules.takeBack(
                    units, of: move.creditKey, as: move.key, kind: kind, policy: policy, atMs: atMs, from: &wallet)
            }
            guard let outcome else { throw Self.balanceOverflow(wallet) }
            work.history.append(
                WalletHistoryEntry(
                    wallet: wallet, kind: kind == .upgrade ? .upgrade : .debit, key: move.key,
                    creditKey: move.creditKey, amount: units, balanceChange: outcome.balanceChange(under: policy),
                    shortfall: outcome.shortfall, atMs: atMs))
            switch policy {
            case .floor: summary.unrecoveredUnits += Int(clamping: outcome.shortfall)
            case .debt: summary.debtUnits += Int(clamping: outcome.shortfall)
            }
        case .reverseRefunds(_, _, let units):
            var reversal: WalletRules.Reversal?
            work.update(wallet) { wallet in reversal = WalletRules.reverseRefunds(of: move.creditKey, in: &wallet) }
            guard let reversal else { throw Self.balanceOverflow(wallet) }
            work.history.append(
                WalletHistoryEntry(
                    wallet: wallet, kind: .recredit, key: move.key, creditKey: move.creditKey, amount: units,
                    balanceChange: reversal.balanceChange, atMs: nowMs))
            work.recordRepayments(
                reversal.settlements.filter(\.ofDebt).map { ($0.clawback, $0.amount) }, of: wallet, atMs: nowMs)
        }
    }

    /// Wallets the batch credited without reading them, which the balances upsert found in debt: read them now (the
    /// upsert locked them) and repay the debt from the batch's new lots, in the order they were credited.
    mutating func repayDebtsOfWalletsNotRead() throws(PostgresError) {
        let owing = Set(walletsInDebt)
        walletsInDebt.removeAll()
        let lots = addedLots.filter { owing.contains($0.wallet) }
        addedLots.removeAll()
        guard !lots.isEmpty else { return }
        let keys = owing.sorted()
        var work = WalletWork()
        try work.cacheRead(keys, try session.pipeline(WalletWork.readStatements(keys))[...])
        for move in lots {
            var repaid: [(clawback: String, amount: Int64)] = []
            work.update(move.wallet) { wallet in repaid = WalletRules.repayDebt(from: move.key, in: &wallet) }
            work.recordRepayments(repaid, of: move.wallet, atMs: nowMs)
        }
        _ = try session.pipeline(work.writeStatements())
    }

    /// The balance of `wallet` would pass 64 bits: refused as the database refuses such a value (a data exception),
    /// so the worker applies the batch message by message and dead-letters the credit that overflows.
    static func balanceOverflow(_ wallet: WalletKey) -> PostgresError {
        PostgresError(
            sqlState: .numericValueOutOfRange, message: "the balance of \(wallet.item) would pass 64 bits", isConnectionBroken: false)
    }
}
