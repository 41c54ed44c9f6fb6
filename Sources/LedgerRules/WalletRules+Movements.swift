/// What a purchase's crediting decision does to its owner's wallet.
public enum WalletMovement: Sendable, Equatable {
    /// The purchase's credit: a new lot of `amount` units, keyed by its `credit_key`.
    case addPurchase(owner: String, item: String, amount: Int64)
    /// A refund's share (`.refund`) or an upgrade's unused share (`.upgrade`) of the purchase, taken back.
    case takeBack(owner: String, item: String, units: Int64, kind: ClawbackKind)
    /// A reversed refund (`recredit`): give back what the purchase's refunds took (`units` is what the crediting
    /// rules counted; the wallet gives back what was actually taken, and cancels the rest).
    case reverseRefunds(owner: String, item: String, units: Int64)

    public var owner: String {
        switch self {
        case .addPurchase(let owner, _, _), .takeBack(let owner, _, _, _), .reverseRefunds(let owner, _, _): owner
        }
    }

    public var item: String {
        switch self {
        case .addPurchase(_, let item, _), .takeBack(_, let item, _, _), .reverseRefunds(_, let item, _): item
        }
    }

    /// Whether applying it needs the wallet's lots (a credit alone is a new lot: written without reading).
    public var readsWallet: Bool {
        if case .addPurchase = self { return false }
        return true
    }
}

extension WalletRules {
    /// The wallet movements of `decision`, the crediting rules' answer to `input` for a purchase that was in
    /// `before`: each `adjustBalance` of an item, read by what caused it. A positive one is the purchase's credit (a
    /// new lot), except for a `recredit` of a purchase refunded after its credit, which gives back what the refunds
    /// took; a negative one is a take-back (an upgrade's, or a refund's, including the share of a prorated refund
    /// that arrived before the credit).
    public static func movements(for input: LedgerInput, before: PurchaseState, decision: LedgerDecision)
        -> [WalletMovement]
    {
        var cause = input
        while case .signed(_, let inner) = cause { cause = inner }
        return decision.actions.compactMap { action -> WalletMovement? in
            guard case .adjustBalance(let owner, let item, let delta) = action, delta != 0 else { return nil }
            if delta > 0 {
                if case .recredit = cause, before.status == .debited {
                    return .reverseRefunds(owner: owner, item: item, units: delta)
                }
                return .addPurchase(owner: owner, item: item, amount: delta)
            }
            if case .upgrade = cause { return .takeBack(owner: owner, item: item, units: -delta, kind: .upgrade) }
            return .takeBack(owner: owner, item: item, units: -delta, kind: .refund)
        }
    }
}
