/// The wallet's arithmetic, the specification of spends, grants and take-backs (docs/CREDITING.md, "The wallet"):
/// pure functions over a `Wallet`, table-tested in `WalletRulesTests`. `CreditingRules` decides *how much* a purchase
/// credits or takes back; these decide *from where*:
///
/// - **Spends** consume lots first in, first out: by `addedAtMs` (a purchase's credit time, a grant's time), then by
///   key; purchased and granted lots alike. A spend is refused (nothing changes) when the lots hold less than it
///   asks, or while any debt is outstanding.
/// - **Take-backs** (a refund's share, an upgrade's unused share) take first from the purchase's own lot, then from
///   the user's other *purchased* lots, oldest first; never from a grant. What that cannot cover is, under
///   `ClawbackPolicy.floor`, `unrecovered` (the balance never goes below zero), under `.debt`, debt (the balance
///   goes negative).
/// - **New lots** (a credit, a grant) repay outstanding debt first, oldest debt first, recorded as takes of the
///   clawback that owed it.
/// - **A reversal** (`recredit`) gives back exactly what its purchase's refunds took: each take back to its lot,
///   their outstanding debt and unrecovered units cancelled. An upgrade's take is never given back. Units restored
///   to a lot whose own purchase was refunded meanwhile pay that refund's shortfall first; what is left repays
///   outstanding debt (`settleFromRestored`).
/// - **Overflow** past 64 bits is reported (nil), never trapped: the caller refuses the operation.
///
/// Every operation keeps `balance` = Σ remaining − `debt`.
public enum WalletRules {
    /// The order spends consume lots in: oldest first (`addedAtMs`), ties by key.
    public static func fifo(_ lhs: WalletLot, _ rhs: WalletLot) -> Bool {
        (lhs.addedAtMs, lhs.key) < (rhs.addedAtMs, rhs.key)
    }

    // MARK: Spend

    /// Why a spend was refused.
    public enum Refusal: Error, Sendable, Equatable {
        /// The lots hold only `available` units.
        case insufficientBalance(available: Int64)
        /// Debt is outstanding (`LEDGER_CLAWBACK=debt`): nothing can be spent until it is repaid.
        case debt(outstanding: Int64)
    }

    /// Spends `amount` (> 0) from `wallet`, first in, first out.
    /// - Returns: the lots it consumed, in order, or why it was refused (then `wallet` is unchanged).
    public static func spend(_ amount: Int64, from wallet: inout Wallet) -> Result<[LotShare], Refusal> {
        precondition(amount > 0, "a spend is of a positive amount")
        if wallet.debt > 0 { return .failure(.debt(outstanding: wallet.debt)) }
        let available = wallet.remaining
        guard available >= amount else { return .failure(.insufficientBalance(available: available)) }
        var left = amount
        var shares: [LotShare] = []
        for lot in wallet.lots.values.filter({ $0.remaining > 0 }).sorted(by: fifo) where left > 0 {
            let share = min(lot.remaining, left)
            wallet.lots[lot.key]?.spent += share
            shares.append(LotShare(lot: lot.key, amount: share))
            left -= share
        }
        wallet.balance -= amount
        return .success(shares)
    }

    // MARK: New lots

    /// Adds `lot` (a credit or a grant, nothing of it used yet) to `wallet`; it repays outstanding debt first.
    /// - Returns: the repayments (clawback key, units), or nil when the balance would overflow 64 bits (then
    ///   `wallet` is unchanged).
    public static func add(_ lot: WalletLot, to wallet: inout Wallet) -> [(clawback: String, amount: Int64)]? {
        precondition(lot.amount > 0 && lot.remaining == lot.amount, "a new lot is of a positive, unused amount")
        guard wallet.lots[lot.key] == nil else { return [] }
        let (balance, overflow) = wallet.balance.addingReportingOverflow(lot.amount)
        guard !overflow else { return nil }
        wallet.lots[lot.key] = lot
        wallet.balance = balance
        return repayDebt(from: lot.key, in: &wallet)
    }

    /// Repays outstanding debt, oldest first, from what lot `lotKey` has remaining (the balance does not change:
    /// the lot's units go to the debt). A new lot does this as it is added (`add`); a lot written without reading
    /// the wallet does it once the wallet is read.
    /// - Returns: the repayments (clawback key, units).
    public static func repayDebt(from lotKey: String, in wallet: inout Wallet) -> [(clawback: String, amount: Int64)] {
        guard var lot = wallet.lots[lotKey], wallet.debt > 0 else { return [] }
        var repayments: [(clawback: String, amount: Int64)] = []
        let owed = wallet.clawbacks.values.filter { $0.debt > 0 }.sorted { ($0.atMs, $0.key) < ($1.atMs, $1.key) }
        for clawback in owed where lot.remaining > 0 {
            let share = min(lot.remaining, clawback.debt)
            lot.covered += share
            wallet.clawbacks[clawback.key]?.debt -= share
            wallet.clawbacks[clawback.key]?.takes.append(LotShare(lot: lotKey, amount: share))
            wallet.debt -= share
            repayments.append((clawback.key, share))
        }
        wallet.lots[lotKey] = lot
        return repayments
    }

    // MARK: Take-backs

    /// What a take-back did.
    public struct TakeBack: Sendable, Equatable {
        /// Units taken from lots (the purchase's own first).
        public var taken: Int64
        /// Units not taken: `unrecovered` under `floor`, debt under `debt`.
        public var shortfall: Int64

        public init(taken: Int64, shortfall: Int64) {
            self.taken = taken
            self.shortfall = shortfall
        }

        /// What it did to the balance under `policy`: the units taken, and under `debt` the shortfall too (the
        /// balance goes negative); under `floor` the shortfall is only recorded.
        public func balanceChange(under policy: ClawbackPolicy) -> Int64 {
            -(taken + (policy == .debt ? shortfall : 0))
        }
    }

    /// Takes `units` of purchase `creditKey` back from `wallet` and records it as the clawback `key` (a key
    /// recorded before takes nothing again).
    /// - Returns: what it took, or nil when the balance, the debt or the unrecovered units would pass 64 bits (then
    ///   `wallet` is unchanged: the caller refuses it as it refuses a balance overflow, never traps).
    public static func takeBack(
        _ units: Int64, of creditKey: String, as key: String, kind: ClawbackKind, policy: ClawbackPolicy,
        atMs: Int64, from wallet: inout Wallet
    ) -> TakeBack? {
        guard units > 0, wallet.clawbacks[key] == nil else { return TakeBack(taken: 0, shortfall: 0) }
        var next = wallet
        var clawback = Clawback(key: key, creditKey: creditKey, kind: kind, requested: units, atMs: atMs)
        var left = units
        if let own = next.lots[creditKey], own.remaining > 0 {
            let share = min(own.remaining, left)
            next.lots[creditKey]?.taken += share
            clawback.takes.append(LotShare(lot: creditKey, amount: share))
            left -= share
        }
        // The part the user already spent: from their other purchased currency, oldest first; never from a grant.
        let others = next.lots.values.filter { $0.kind == .purchase && $0.key != creditKey && $0.remaining > 0 }
        for lot in others.sorted(by: fifo) where left > 0 {
            let share = min(lot.remaining, left)
            next.lots[lot.key]?.covered += share
            clawback.takes.append(LotShare(lot: lot.key, amount: share))
            left -= share
        }
        let taken = units - left
        guard let balance = next.balance.minus(taken) else { return nil }
        next.balance = balance
        switch policy {
        case .floor:
            guard let unrecovered = next.unrecovered.plus(left) else { return nil }
            clawback.unrecovered = left
            next.unrecovered = unrecovered
        case .debt:
            guard let debt = next.debt.plus(left), let balance = next.balance.minus(left) else { return nil }
            clawback.debt = left
            next.debt = debt
            next.balance = balance
        }
        next.clawbacks[key] = clawback
        wallet = next
        return TakeBack(taken: taken, shortfall: left)
    }

    // MARK: Reversal

    /// What a reversal gave back.
    public struct Reversal: Sendable, Equatable {
        /// Units restored to lots (every take of the reversed clawbacks, repayments included).
        public var restored: Int64
        /// Outstanding debt cancelled.
        public var debtCancelled: Int64
        /// Unrecovered units cancelled (they are no longer owed to anyone).
        public var unrecoveredCancelled: Int64
        /// The clawbacks reversed, in key order.
        public var clawbacks: [String]
        /// What the restored units paid before they reached the balance (`settleFromRestored`): the shortfall of a
        /// refund of the purchase whose lot they came back to, then outstanding debt.
        public var settlements: [Settlement]

        public init(
            restored: Int64, debtCancelled: Int64, unrecoveredCancelled: Int64, clawbacks: [String],
            settlements: [Settlement] = []
        ) {
            self.restored = restored
            self.debtCancelled = debtCancelled
            self.unrecoveredCancelled = unrecoveredCancelled
            self.clawbacks = clawbacks
            self.settlements = settlements
        }

        /// Restored units that went to a refund's unrecovered units (they never reach the balance).
        public var unrecoveredSettled: Int64 {
            settlements.reduce(0) { $0 + ($1.ofDebt ? 0 : $1.amount) }
        }

        /// What the balance gained (units that repaid debt lower the debt as much as they raise the lots).
        public var balanceChange: Int64 { restored + debtCancelled - unrecoveredSettled }
    }

    /// Gives back what the refunds of purchase `creditKey` not reversed yet took (a `recredit`): each take to its
    /// lot, their debt and unrecovered units cancelled; then the units restored settle what is owed before they reach
    /// the balance (`settleFromRestored`). `wallet` must hold those clawbacks, the lots they took from, the open
    /// refunds of those lots' purchases and the clawbacks with debt outstanding.
    /// - Returns: what it gave back, or nil when the balance would pass 64 bits (then `wallet` is unchanged).
    public static func reverseRefunds(of creditKey: String, in wallet: inout Wallet) -> Reversal? {
        var next = wallet
        var reversal = Reversal(restored: 0, debtCancelled: 0, unrecoveredCancelled: 0, clawbacks: [])
        var restoredLots: Set<String> = []
        let open = next.clawbacks.values.filter { $0.creditKey == creditKey && $0.kind == .refund && !$0.reversed }
        for clawback in open.sorted(by: { $0.key < $1.key }) {
            for take in clawback.takes {
                guard var lot = next.lots[take.lot] else { continue }
                // A take from the purchase's own lot was counted as taken; one from another lot as covered.
                let back: Int64
                if take.lot == creditKey {
                    back = min(take.amount, lot.taken)
                    lot.taken -= back
                } else {
                    back = min(take.amount, lot.covered)
                    lot.covered -= back
                }
                guard let restored = reversal.restored.plus(back) else { return nil }
                reversal.restored = restored
                if back > 0 { restoredLots.insert(take.lot) }
                next.lots[take.lot] = lot
            }
            guard let debtCancelled = reversal.debtCancelled.plus(clawback.debt),
                let unrecoveredCancelled = reversal.unrecoveredCancelled.plus(clawback.unrecovered)
            else { return nil }
            reversal.debtCancelled = debtCancelled
            reversal.unrecoveredCancelled = unrecoveredCancelled
            next.debt -= clawback.debt
            next.unrecovered -= clawback.unrecovered
            next.clawbacks[clawback.key]?.debt = 0
            next.clawbacks[clawback.key]?.unrecovered = 0
            next.clawbacks[clawback.key]?.reversed = true
            reversal.clawbacks.append(clawback.key)
        }
        reversal.settlements = settleFromRestored(restoredLots, in: &next)
        guard let gain = reversal.restored.plus(reversal.debtCancelled)?.minus(reversal.unrecoveredSettled),
            let balance = next.balance.plus(gain)
        else { return nil }
        next.balance = balance
        wallet = next
        return reversal
    }
}
