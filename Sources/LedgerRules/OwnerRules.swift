/// Whose purchase a claim is, and which owner links a credit writes: the ledger's answer to "who bought this?", pure.
/// The store reads what it knows of the transaction's `app_account_token` and `original_transaction_id` (the
/// backend's declaration, the links earlier credits made, per environment) and asks these rules.
///
/// Why per environment: a link is made by the first credited claim of a token, and a token is only the app's word
/// (a modified client can set anyone's). A sandbox purchase is free (TestFlight), so a token linked by a sandbox claim
/// must never decide who owns production money. A declaration is the backend's own word: it binds everywhere.
public enum OwnerRules {
    /// What the ledger knows about one transaction's claim.
    public struct Facts: Sendable, Equatable {
        /// A result's `user_id` (else `client_id`); nil for an event, or a result that names nobody.
        public var claimant: String?
        /// The transaction's Apple environment: the links of this environment count, never another's.
        public var environment: PurchaseEnvironment
        /// The transaction carries an `app_account_token`.
        public var hasToken: Bool
        /// The user the backend declared the token for (`PUT /v1/users/{user_id}/app-account-token`), in every
        /// environment.
        public var declaredOwner: String?
        /// The users the token is linked to, per environment (by the first credited claim there).
        public var tokenLinks: [PurchaseEnvironment: String]
        /// The users the `original_transaction_id` is linked to, per environment.
        public var originalLinks: [PurchaseEnvironment: String]

        public init(
            claimant: String?, environment: PurchaseEnvironment, hasToken: Bool, declaredOwner: String? = nil,
            tokenLinks: [PurchaseEnvironment: String] = [:], originalLinks: [PurchaseEnvironment: String] = [:]
        ) {
            self.claimant = claimant
            self.environment = environment
            self.hasToken = hasToken
            self.declaredOwner = declaredOwner
            self.tokenLinks = tokenLinks
            self.originalLinks = originalLinks
        }
    }

    /// Why the owner is who it is.
    public enum Basis: String, Sendable, Equatable {
        /// The backend declared the transaction's token for this user.
        case declaredToken = "declared_token"
        /// An earlier credit in this environment linked the token to this user.
        case linkedToken = "linked_token"
        /// The result's own user (nothing else says whose it is).
        case claimant
        /// A transaction without a token: the user its `original_transaction_id` is linked to in this environment.
        case linkedOriginal = "linked_original"
    }

    /// What a claim waits on when no owner is known.
    public enum WaitsOn: Sendable, Equatable {
        /// Its token (never the original id: one Apple ID may serve several app accounts).
        case token
        case originalTransactionId
    }

    public struct Owner: Sendable, Equatable {
        /// nil: nobody is known yet; the claim waits (`waitsOn`).
        public var user: String?
        public var basis: Basis?
        public var waitsOn: WaitsOn?
        /// The result's user claimed a transaction whose token is someone else's: credited to the token's owner,
        /// and this claim recorded as refused.
        public var claimantRefused: Bool

        public init(user: String?, basis: Basis?, waitsOn: WaitsOn? = nil, claimantRefused: Bool = false) {
            self.user = user
            self.basis = basis
            self.waitsOn = waitsOn
            self.claimantRefused = claimantRefused
        }
    }

    /// The owner of a claim:
    /// 1. a token declared by the backend belongs to its declared user, in every environment, whoever submits it;
    /// 2. else a token linked in the transaction's environment belongs to that user, whoever submits it;
    /// 3. else the result's user;
    /// 4. else (an event) a transaction with a token waits for the token's owner; one without a token belongs to the
    ///    user its `original_transaction_id` is linked to in this environment, or waits for one.
    /// A claimant who is not the token's owner is refused (recorded): the purchase goes to the token's owner. Not
    /// refused outright, because the token is what Apple signed into the transaction at purchase: crediting its owner
    /// never gives money to anyone the backend did not name (a modified client that sets someone else's token only
    /// pays for their purchase), and it keeps every period of a subscription with one owner (the renewals, which
    /// carry no claimant, follow the token too).
    public static func owner(_ facts: Facts) -> Owner {
        if facts.hasToken {
            let tokenOwner: (String, Basis)? =
                if let declared = facts.declaredOwner { (declared, .declaredToken) }
                else if let linked = facts.tokenLinks[facts.environment] { (linked, .linkedToken) }
                else { nil }
            if let (user, basis) = tokenOwner {
                let refused = facts.claimant.map { $0 != user } ?? false
                return Owner(user: user, basis: basis, claimantRefused: refused)
            }
            if let claimant = facts.claimant { return Owner(user: claimant, basis: .claimant) }
            return Owner(user: nil, basis: nil, waitsOn: .token)
        }
        if let claimant = facts.claimant { return Owner(user: claimant, basis: .claimant) }
        if let linked = facts.originalLinks[facts.environment] { return Owner(user: linked, basis: .linkedOriginal) }
        return Owner(user: nil, basis: nil, waitsOn: .originalTransactionId)
    }

    /// Whether a credit to `owner` links a value (the token or the original id) to them in its environment, given
    /// the value's current link there (`current`) and whether the value is a declared token: never for a declared
    /// token (the declaration already says whose it is, and no claim may bind it); never when it is linked to them
    /// already; under `keep` only when nothing is linked yet (the first claim wins); under `transfer` to the latest
    /// owner.
    public static func links(
        _ owner: String, current: String?, declared: Bool, policy: OwnershipPolicy
    ) -> Bool {
        guard !declared, current != owner else { return false }
        return current == nil || policy == .transfer
    }

    /// The answer to a declaration of `token` for `user`, given the token's declared owner so far.
    public enum Declaration: Sendable, Equatable {
        /// Recorded now: claims waiting for the token are resolved to `user`.
        case declared
        /// Declared for this user before: nothing changes (the same PUT again).
        case alreadyDeclared
        /// Declared for another user: refused (`409`); a declaration is never taken by another.
        case conflict
    }

    public static func declare(user: String, declaredOwner: String?) -> Declaration {
        switch declaredOwner {
        case nil: .declared
        case user: .alreadyDeclared
        default: .conflict
        }
    }
}
