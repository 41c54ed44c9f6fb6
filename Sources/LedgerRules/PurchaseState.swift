/// Where one purchase (`credit_key`) stands.
public enum PurchaseStatus: String, Sendable, CaseIterable {
    /// Never seen (no row): the state before anything arrived, and again after a refund with no claim was
    /// reversed.
    case unseen
    /// A `credit` event arrived whose owner is not known yet; it waits for a result naming one.
    case pendingOwner = "pending_owner"
    /// Credited once to its owner.
    case credited
    /// Taken back (refund, or a family-shared entitlement revoked).
    case debited
    /// Given back after a reversed refund.
    case recredited
    /// Refunded or revoked before it was credited: no credit is ever applied (until a reversal). A prorated refund
    /// before the credit is not this: the credit is applied and its share taken (`refusedPercentage`).
    case refused
    /// A subscription period replaced by an upgrade: its unused share was taken back, its entitlement ended.
    case upgraded
}

/// The ledger's whole memory of one purchase: what the rules read and write. Amounts are whole units of the
/// purchase's item (0 for entitlements).
public struct PurchaseState: Sendable, Equatable {
    public var status: PurchaseStatus
    /// Who the purchase belongs to (the first claimant, or under `transfer` the latest one of an entitlement).
    public var owner: String?
    public var productId: String?
    /// What it grants per unit; nil when its `credit` was null (owned, nothing granted) or it was never claimed.
    public var grant: Grant?
    public var quantity: Int64
    public var expiresDateMs: Int64?
    /// Units given to the owner in total (the credit, plus what recredits gave back).
    public var amountCredited: Int64
    /// Units taken back in total (every debit).
    public var amountDebited: Int64
    /// Units the latest debit took since the last credit or recredit (what a recredit gives back, and what a
    /// further debit of the same purchase adds to).
    public var lastDebit: Int64
    public var creditedAtMs: Int64?
    /// The book its balances and entitlements are kept in (sandbox purchases apart from production money).
    public var book: Book
    /// Apple's `purchase_date_ms` of the credited transaction (where a subscription period starts).
    public var purchaseDateMs: Int64?
    /// While `refused`: the share the refund that came first took, in thousandths of a percent; nil = all of it.
    public var refusedPercentage: Int64?
    /// The `signed_date_ms` of the last money event (`debit`, `recredit`, `revoke`) applied: money events signed
    /// before it move nothing.
    public var lastEventSignedMs: Int64?
    /// The `signed_date_ms` of the last `subscription_status` event applied: an older status never overwrites a newer
    /// expiry. Kept apart from the money events' order, so a status notification never makes a refund stale.
    public var lastStatusSignedMs: Int64?
    /// Apple said this period was replaced by an upgrade (`is_upgraded`): evidence for `UpgradeRule`.
    public var upgradeReported: Bool
    /// When the upgrade that replaced this period took effect (the new period's purchase), once applied.
    public var upgradedAtMs: Int64?
    /// Units the upgrade took back: never given back by a refund's reversal, and already taken for a later refund.
    public var upgradeTaken: Int64
    /// The product's kind as the credited transaction named it (`product_type`); nil when unknown (purchases
    /// recorded before migration 7, or a message that named none).
    public var productKind: ProductKind?

    public init(
        status: PurchaseStatus = .unseen, owner: String? = nil, productId: String? = nil, grant: Grant? = nil,
        quantity: Int64 = 1, expiresDateMs: Int64? = nil, amountCredited: Int64 = 0, amountDebited: Int64 = 0,
        lastDebit: Int64 = 0, creditedAtMs: Int64? = nil, book: Book = .production, purchaseDateMs: Int64? = nil,
        refusedPercentage: Int64? = nil, lastEventSignedMs: Int64? = nil, upgradeReported: Bool = false,
        upgradedAtMs: Int64? = nil, upgradeTaken: Int64 = 0, productKind: ProductKind? = nil,
        lastStatusSignedMs: Int64? = nil
    ) {
        self.status = status
        self.owner = owner
        self.productId = productId
        self.grant = grant
        self.quantity = quantity
        self.expiresDateMs = expiresDateMs
        self.amountCredited = amountCredited
        self.amountDebited = amountDebited
        self.lastDebit = lastDebit
        self.creditedAtMs = creditedAtMs
        self.book = book
        self.purchaseDateMs = purchaseDateMs
        self.refusedPercentage = refusedPercentage
        self.lastEventSignedMs = lastEventSignedMs
        self.upgradeReported = upgradeReported
        self.upgradedAtMs = upgradedAtMs
        self.upgradeTaken = upgradeTaken
        self.productKind = productKind
        self.lastStatusSignedMs = lastStatusSignedMs
    }

    /// A purchase the ledger has never seen.
    public static let unknown = PurchaseState()

    /// Units one full credit gives: the item's amount × quantity (0 for entitlements and null credits).
    public var fullAmount: Int64 {
        if case .item(_, let amount) = grant { return amount * quantity }
        return 0
    }

    /// Credited and nothing taken back since: the states a new claim, an upgrade or a refund start from.
    public var isInForce: Bool { status == .credited || status == .recredited }

    /// Credited at some point (whatever was taken back since): what a sandbox credit counts once.
    public var isCreditedOnce: Bool { status != .unseen && status != .pendingOwner && status != .refused }
}
