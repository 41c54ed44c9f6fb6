/// A claim to credit one purchase: a `verified` result's creditable transaction (owner known), or a `credit` event's
/// transaction (owner known only when a result tied its `app_account_token`, else its `original_transaction_id`, to
/// one).
public struct CreditClaim: Sendable, Equatable {
    public enum Source: Sendable, Equatable {
        /// A verified result: the owner is its `user_id` (else `client_id`).
        case result(submissionId: String)
        /// A `credit` purchase event.
        case event(eventId: String)
    }

    public var source: Source
    /// nil: nobody is known to own it yet (events only).
    public var owner: String?
    public var productId: String
    public var credit: CreditShape
    public var quantity: Int64
    public var expiresDateMs: Int64?
    /// When the ledger applies it (the message's time), for `credited_at_ms` and refused claims.
    public var atMs: Int64
    public var environment: PurchaseEnvironment
    public var ownership: Ownership
    /// Apple's `purchase_date_ms`: where a subscription period starts (upgrades compare periods by it).
    public var purchaseDateMs: Int64?
    /// The transaction's `product_type` (nil: it named none, or one the ledger does not know).
    public var productKind: ProductKind?

    public init(
        source: Source, owner: String?, productId: String, credit: CreditShape, quantity: Int64,
        expiresDateMs: Int64?, atMs: Int64, environment: PurchaseEnvironment = .production,
        ownership: Ownership = .purchased, purchaseDateMs: Int64? = nil, productKind: ProductKind? = nil
    ) {
        self.source = source
        self.owner = owner
        self.productId = productId
        self.credit = credit
        self.quantity = quantity
        self.expiresDateMs = expiresDateMs
        self.atMs = atMs
        self.environment = environment
        self.ownership = ownership
        self.purchaseDateMs = purchaseDateMs
        self.productKind = productKind
    }
}

/// What can happen to one purchase.
public indirect enum LedgerInput: Sendable, Equatable {
    case credit(CreditClaim)
    /// A refund. `revocationPercentage` in thousandths of a percent (50000 = half); nil = all of it.
    case debit(revocationPercentage: Int64?)
    /// A reversed refund: give back what the last debit took.
    case recredit
    /// A family-shared entitlement withdrawn.
    case revoke
    /// A subscription's state changed; `expiresDateMs` is the transaction's expiry now (nil: unchanged).
    case subscriptionStatus(expiresDateMs: Int64?)
    /// An event as Apple signed it (`signed_date_ms`): it takes effect only if it was not signed before the last
    /// event of its order applied to this purchase, money events among money events and `subscription_status` among
    /// status events (Apple retries for 72 hours and a backfill re-posts, so a `REFUND` can arrive after its own
    /// `REFUND_REVERSED`, or after a status notification signed later).
    case signed(atMs: Int64, LedgerInput)
    /// This subscription period was replaced by an upgrade to a period that starts at `newPurchaseDateMs`: its
    /// unused share is taken back and its entitlement ends (`UpgradeRule` decides when this applies).
    case upgrade(newPurchaseDateMs: Int64)
}

/// A change the store makes to the ledger's other tables. Balances and entitlements change only through these, in
/// the purchase's `book`.
public enum LedgerAction: Sendable, Equatable {
    /// Add `delta` (negative to take back) to `owner`'s balance of `item`.
    case adjustBalance(owner: String, item: String, delta: Int64)
    /// The purchase's entitlement belongs to `owner` until `expiresDateMs` (nil: for good); replaces any earlier
    /// grant of this purchase (a transfer moves it).
    case grantEntitlement(owner: String, entitlement: String, expiresDateMs: Int64?)
    /// The purchase's entitlement ends now.
    case endEntitlement
    /// The purchase's entitlement now expires at `expiresDateMs`.
    case setEntitlementExpiry(expiresDateMs: Int64)
    /// `userId` claimed a purchase that is not theirs to credit (another owner, or refused): recorded and counted.
    case recordRefusedClaim(userId: String, submissionId: String?, atMs: Int64)
    /// An entitlement moved from one owner to another (`transfer`): logged and counted.
    case recordTransfer(from: String, to: String)
    /// The event waits until a result names the purchase's owner.
    case waitForOwner
    /// The input cannot be applied as it is (an unknown `credit` shape, an impossible amount): dead-lettered.
    case unappliable(reason: String)
    /// The claim is valid but grants nothing by rule (a family-shared purchase of items): counted, nothing moves,
    /// the purchase stays unclaimed.
    case declined(reason: DeclineReason)
    /// An event signed before the last one of its order applied to this purchase: recorded, nothing moves.
    case staleEvent
}

/// Why a valid claim grants nothing.
public enum DeclineReason: String, Sendable, Equatable {
    /// Family Sharing shares entitlements, never items or currency: someone else paid.
    case familySharedItems = "family_shared_items"
}

/// The rules' answer: the purchase's next state and what to change elsewhere.
public struct LedgerDecision: Sendable, Equatable {
    public var state: PurchaseState
    public var actions: [LedgerAction]

    public init(state: PurchaseState, actions: [LedgerAction]) {
        self.state = state
        self.actions = actions
    }
}
