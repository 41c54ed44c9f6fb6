/// What units a reversal gives back pay before they reach the balance (docs/CREDITING.md, "The wallet").
extension WalletRules {
    /// Units of a lot that went to a clawback's shortfall: its debt (`ofDebt`), or under `floor` its unrecovered
    /// units. Recorded as a take of that clawback, so a reversal of it gives them back.
    public struct Settlement: Sendable, Equatable {
        public let clawback: String
        public let lot: String
        public let amount: Int64
        public let ofDebt: Bool

        public init(clawback: String, lot: String, amount: Int64, ofDebt: Bool) {
            self.clawback = clawback
            self.lot = lot
            self.amount = amount
            self.ofDebt = ofDebt
        }
    }

    /// Settles what is owed from the units a reversal restored to `lots`, oldest lot first:
    ///
    /// 1. A lot whose own purchase has a refund not reversed that could not take everything (its units were spent,
    ///    or had gone to cover another refund) pays that shortfall first, as that refund's take on its own lot
    ///    (`taken`): the purchase is refunded, its units are not the user's. Under `floor` this lowers the
    ///    unrecovered units (the balance does not gain them), under `debt` the debt.
    /// 2. What is left repays outstanding debt, oldest debt first, as a new lot does (`repayDebt`): a balance that
    ///    is positive while debt is outstanding would refuse every spend.
    static func settleFromRestored(_ lots: Set<String>, in wallet: inout Wallet) -> [Settlement] {
        var settlements: [Settlement] = []
        let restored = lots.compactMap { wallet.lots[$0] }.sorted(by: fifo)
        for lot in restored where lot.kind == .purchase {
            let refunds = wallet.clawbacks.values.filter {
                $0.creditKey == lot.key && $0.kind == .refund && !$0.reversed && ($0.debt > 0 || $0.unrecovered > 0)
            }
            for refund in refunds.sorted(by: { ($0.atMs, $0.key) < ($1.atMs, $1.key) }) {
                guard var current = wallet.lots[lot.key], current.remaining > 0, var clawback = wallet.clawbacks[refund.key]
                else { break }
                let ofDebt = clawback.debt > 0
                let share = min(current.remaining, ofDebt ? clawback.debt : clawback.unrecovered)
                current.taken += share
                clawback.takes.append(LotShare(lot: lot.key, amount: share))
                if ofDebt {
                    clawback.debt -= share
                    wallet.debt -= share
                } else {
                    clawback.unrecovered -= share
                    wallet.unrecovered -= share
                }
                wallet.lots[lot.key] = current
                wallet.clawbacks[refund.key] = clawback
                settlements.append(Settlement(clawback: refund.key, lot: lot.key, amount: share, ofDebt: ofDebt))
            }
        }
        for lot in restored where wallet.debt > 0 {
            for repayment in repayDebt(from: lot.key, in: &wallet) {
                settlements.append(
                    Settlement(clawback: repayment.clawback, lot: lot.key, amount: repayment.amount, ofDebt: true))
            }
        }
        return settlements
    }
}

extension Int64 {
    /// `self + other`, or nil past 64 bits: the wallet's arithmetic reports overflow instead of trapping.
    func plus(_ other: Int64) -> Int64? {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? nil : sum
    }

    /// `self − other`, or nil past 64 bits.
    func minus(_ other: Int64) -> Int64? {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? nil : difference
    }
}
