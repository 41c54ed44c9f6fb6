/// What one unit of a purchase gives, read from the catalog's `credit` object.
public enum Grant: Sendable, Equatable {
    /// `{"item": I, "amount": A}`: `A` units of balance `I` per unit bought.
    case item(name: String, amount: Int64)
    /// `{"entitlement": E}`: access to `E` until the transaction's `expires_date_ms` (for good when null).
    case entitlement(name: String)
}

/// A transaction's `credit` as the ledger understood it.
public enum CreditShape: Sendable, Equatable {
    /// `credit` is null (no catalog, or the product is not in it): the purchase is owned, nothing is granted.
    case nothing
    case grant(Grant)
    /// A `credit` object of a shape the ledger does not know: never guessed, the message is dead-lettered.
    case unknown(description: String)
}

/// `LEDGER_OWNERSHIP_POLICY`.
public enum OwnershipPolicy: String, Sendable, CaseIterable {
    /// A purchase stays with its first owner; later claims by others are refused (recorded, counted).
    case keep
    /// An entitlement moves to the latest verified claimant; item amounts never move.
    case transfer
}

/// The Apple environment a purchase was made in (Apple's own data says it: the result's or event's `environment`,
/// and the purchase's key).
public enum PurchaseEnvironment: String, Sendable, CaseIterable {
    case production
    /// App Review, TestFlight and sandbox testers: nobody paid.
    case sandbox
}

/// `LEDGER_SANDBOX_POLICY`: what a Sandbox purchase is worth in this deployment.
public enum SandboxPolicy: String, Sendable, CaseIterable {
    /// Applied by the same rules into balances and entitlements kept apart (the `sandbox` book).
    case separate
    /// Mixed with production (a sandbox-only deployment).
    case credit
    /// Recorded (owner, state) and nothing granted.
    case ignore
}

/// Where a purchase's balances and entitlements are kept. Production money never mixes with sandbox money unless
/// `LEDGER_SANDBOX_POLICY=credit` says so.
public enum Book: String, Sendable, CaseIterable {
    case production
    case sandbox
}

/// Who paid for a transaction (Apple's `in_app_ownership_type`).
public enum Ownership: Sendable, Equatable {
    /// The user's own purchase.
    case purchased
    /// Shared by the family organizer (Family Sharing): someone else's payment. It may grant entitlements, never
    /// items or currency.
    case familyShared
}
