/// `LEDGER_CLAWBACK`: what a refund does with the part of a purchase the user already spent.
public enum ClawbackPolicy: String, Sendable, CaseIterable {
    /// Take what the user's purchased currency still holds, never below zero; the rest is recorded as
    /// `unrecovered` (counted, never collected).
    case floor
    /// The balance may go negative: the rest is `debt`, spends are refused while any is outstanding, and later
    /// credits and grants repay it first.
    case debt
}

/// Where a lot's units came from.
public enum LotKind: String, Sendable, CaseIterable {
    /// A purchase's credit (its key is the purchase's `credit_key`), or a balance the ledger held before it kept lots
    /// (schema version 6's opening lot).
    case purchase
    /// Currency given, not bought (`POST /v1/users/{user_id}/grants`): never taken back by a purchase's refund.
    case grant
}

/// One credit of a wallet (a user's balance of one item in one book): what it added and where those units went.
/// Spends consume lots first in, first out (`WalletRules.fifo`).
public struct WalletLot: Sendable, Equatable {
    /// The purchase's `credit_key`, or `grant:<Idempotency-Key>`.
    public let key: String
    public let kind: LotKind
    /// Units the lot added.
    public let amount: Int64
    /// Units spends consumed.
    public var spent: Int64
    /// Units taken back by its own purchase's refunds and upgrade.
    public var taken: Int64
    /// Units taken to cover what another purchase's refund could not take from that purchase (its spent part), or
    /// to repay debt: consumed on the user's behalf.
    public var covered: Int64
    /// When it was added: the purchase's credit time (`credited_at_ms`), the grant's time. The FIFO order.
    public let addedAtMs: Int64

    public init(
        key: String, kind: LotKind, amount: Int64, spent: Int64 = 0, taken: Int64 = 0, covered: Int64 = 0,
        addedAtMs: Int64
    ) {
        self.key = key
        self.kind = kind
        self.amount = amount
        self.spent = spent
        self.taken = taken
        self.covered = covered
        self.addedAtMs = addedAtMs
    }

    /// Units still in the wallet.
    public var remaining: Int64 { amount - spent - taken - covered }

    /// Units the user used: spent, or taken to pay for what they spent of refunded purchases (what the refund
    /// responder tells Apple was consumed).
    public var consumed: Int64 { spent + covered }
}

/// Why a clawback took units back.
public enum ClawbackKind: String, Sendable, CaseIterable {
    /// A refund (`debit`): a reversal (`recredit`) gives back exactly what it took.
    case refund
    /// An upgrade's unused share of the replaced period: never given back.
    case upgrade
    /// A negative balance the ledger held before it kept lots (schema version 6): a debt of no purchase.
    case opening
}

/// Units one lot gave to a spend or a clawback.
public struct LotShare: Sendable, Equatable {
    public let lot: String
    public let amount: Int64

    public init(lot: String, amount: Int64) {
        self.lot = lot
        self.amount = amount
    }
}

/// One take-back of a purchase's units (a refund's share, an upgrade's unused share): what it took from which lots,
/// and what it could not take.
public struct Clawback: Sendable, Equatable {
    /// The refund's `event_id`, `upgrade:<credit_key>`, `refund-before-credit:<credit_key>`, or `opening:...`.
    public let key: String
    /// The purchase taken back (nil: the opening debt).
    public let creditKey: String?
    public let kind: ClawbackKind
    /// Units the crediting rules said to take back.
    public let requested: Int64
    /// Units taken, per lot, in the order taken (repayments of its debt appended).
    public var takes: [LotShare]
    /// Units still owed (`debt` policy): repaid by later credits and grants.
    public var debt: Int64
    /// Units not taken and never to be (`floor` policy).
    public var unrecovered: Int64
    /// A reversal gave back what it took.
    public var reversed: Bool
    public let atMs: Int64

    public init(
        key: String, creditKey: String?, kind: ClawbackKind, requested: Int64, takes: [LotShare] = [],
        debt: Int64 = 0, unrecovered: Int64 = 0, reversed: Bool = false, atMs: Int64
    ) {
        self.key = key
        self.creditKey = creditKey
        self.kind = kind
        self.requested = requested
        self.takes = takes
        self.debt = debt
        self.unrecovered = unrecovered
        self.reversed = reversed
        self.atMs = atMs
    }

    /// Units taken so far (repayments included).
    public var taken: Int64 { takes.reduce(0) { $0 + $1.amount } }
}

/// A user's wallet of one item in one book, as far as the rules need it: every lot with units remaining, the
/// clawbacks with debt outstanding, and whatever else an operation names (a purchase's lot, the clawbacks a reversal
/// gives back and the lots they took from). `balance` = Σ remaining − `debt` holds whenever every lot with units
/// remaining is present.
public struct Wallet: Sendable, Equatable {
    /// What users read (`balances.amount`).
    public var balance: Int64
    /// Units owed (Σ of the clawbacks' `debt`).
    public var debt: Int64
    /// Units refunds could not take back (Σ of the clawbacks' `unrecovered`).
    public var unrecovered: Int64
    public var lots: [String: WalletLot]
    public var clawbacks: [String: Clawback]

    public init(
        balance: Int64 = 0, debt: Int64 = 0, unrecovered: Int64 = 0, lots: [WalletLot] = [],
        clawbacks: [Clawback] = []
    ) {
        self.balance = balance
        self.debt = debt
        self.unrecovered = unrecovered
        self.lots = Dictionary(lots.map { ($0.key, $0) }, uniquingKeysWith: { $1 })
        self.clawbacks = Dictionary(clawbacks.map { ($0.key, $0) }, uniquingKeysWith: { $1 })
    }

    /// Units left in the lots (purchased and granted), at most `Int64.max`: with debt outstanding the lots may hold
    /// more than a balance can (balance = remaining − debt), and a sum past 64 bits must not trap (the batch would
    /// crash the ledger again at every restart). Saturating is exact for what reads it: a spend is refused while any
    /// debt is outstanding, and no spend asks more than `Int64.max`.
    public var remaining: Int64 { Self.saturatingSum(lots.values.map { max($0.remaining, 0) }) }

    /// Units left in lots of `kind` (at most `Int64.max`, as `remaining`).
    public func remaining(_ kind: LotKind) -> Int64 {
        Self.saturatingSum(lots.values.map { $0.kind == kind ? max($0.remaining, 0) : 0 })
    }

    private static func saturatingSum(_ values: [Int64]) -> Int64 {
        values.reduce(0) { sum, value in
            let (next, overflow) = sum.addingReportingOverflow(value)
            return overflow ? Int64.max : next
        }
    }
}
