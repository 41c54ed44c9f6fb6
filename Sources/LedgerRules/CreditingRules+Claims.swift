/// Which parts of a message claim a credit: the first question the ledger asks of a result or an event, before whose
/// the claim is (`OwnerRules`) and what it does to the purchase (`CreditingRules.apply`).
extension CreditingRules {
    /// Whether a result with this `outcome` claims its transactions: only `verified` does. A `rejected` or `failed`
    /// result, or an outcome a newer producer adds, moves no money whatever its transactions say.
    @inlinable
    public static func claims(outcome: String) -> Bool { outcome == "verified" }

    /// Whether a transaction is claimed: `creditable` as the pipeline says, and not upgraded away (a transaction the
    /// pipeline marks `is_upgraded` was replaced by another period and is never credited, whatever `creditable`
    /// says; its mark is still evidence for `UpgradeRule`).
    @inlinable
    public static func claims(creditable: Bool, isUpgraded: Bool?) -> Bool { creditable && isUpgraded != true }
}
