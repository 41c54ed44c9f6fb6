extension OwnerRules {
    /// What a result's claim leaves its claimant once the credit is decided.
    public struct ClaimantOutcome: Sendable, Equatable {
        /// The claim is recorded as refused: the transaction's token is someone else's (`Owner.claimantRefused`) and
        /// the ledger holds the purchase (a claim declined or unappliable leaves nothing to record it against).
        public var recordedAsRefused: Bool
        /// The credit links the transaction's token to the claimant, where `links(_:current:declared:policy:)`
        /// allows: only the purchase's owner links (a refused claimant moves no link, under either policy).
        public var linksToken: Bool
        /// The credit links the `original_transaction_id` too: the owner's subscription period (its renewals are
        /// found by it), or an id a claim waits for. A consumable's or a non-consumable's id is never looked up
        /// again once it is credited (its later events find the purchase by key), so it is not linked otherwise.
        public var linksOriginalTransactionId: Bool
    }

    /// What `claimant`'s claim leaves them, given the claim's `owner` (`owner(_:)`) and the purchase after the credit
    /// (`purchaseStatus`, `purchaseOwner`). Links are made in the transaction's environment only (`Facts`).
    /// - Parameters:
    ///   - isPeriod: the transaction is a subscription period.
    ///   - originalAwaited: a claim waits for the transaction's `original_transaction_id` (asked only when it decides).
    public static func claimant(
        _ claimant: String, of owner: Owner, purchaseStatus: PurchaseStatus, purchaseOwner: String?, isPeriod: Bool,
        originalAwaited: @autoclosure () -> Bool
    ) -> ClaimantOutcome {
        let owns = purchaseOwner == claimant
        return ClaimantOutcome(
            recordedAsRefused: owner.claimantRefused && purchaseStatus != .unseen, linksToken: owns,
            linksOriginalTransactionId: owns && (isPeriod || originalAwaited()))
    }
}
