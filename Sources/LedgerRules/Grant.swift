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
