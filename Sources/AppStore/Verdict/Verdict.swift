import ReceiptModel

/// The verdict on a proof of purchase Apple accepted: `verified`, or `rejected` with a reason; plus the transactions
/// a result carries, each marked `creditable` or not.
///
/// Invariant: a rejected verdict carries no creditable transaction (`rejected(_:_:_:)` clears the flag), so a
/// crediting service that credits exactly the creditable transactions can never credit a rejection.
public struct Verdict: Sendable, Equatable {
    public private(set) var outcome: Outcome
    public private(set) var reason: Reason?
    public private(set) var message: String?
    public private(set) var transactions: [VerifiedTransaction]
    /// Transactions whose Apple data holds a cancellation field that could not be read (fail closed: not
    /// creditable), for the caller to log and count. Ids only.
    public private(set) var unreadableCancellationIds: [String]
    /// Transactions whose `quantity` or `is_upgraded` could not be read (fail closed: not creditable), for the caller
    /// to log and count. Ids only.
    public private(set) var unreadableCreditingIds: [String] = []
    /// The app transaction a verified `signed_app_transaction` rests on (`AppTransactionRules`); nil otherwise.
    public private(set) var appTransaction: VerifiedAppTransaction?

    /// A verified app transaction: app ownership, no transactions, nothing to credit.
    public static func verified(_ appTransaction: VerifiedAppTransaction) -> Verdict {
        Verdict(
            outcome: .verified, reason: nil, message: nil, transactions: [], unreadableCancellationIds: [],
            appTransaction: appTransaction)
    }

    public static func verified(
        _ transactions: [VerifiedTransaction], unreadableCancellationIds: [String] = [],
        unreadableCreditingIds: [String] = []
    ) -> Verdict {
        Verdict(
            outcome: .verified, reason: nil, message: nil, transactions: transactions,
            unreadableCancellationIds: unreadableCancellationIds, unreadableCreditingIds: unreadableCreditingIds)
    }

    /// A permanent no; every transaction it shows is marked not creditable (`not_creditable_reason` its own, else
    /// `rejected`).
    public static func rejected(
        _ reason: Reason, _ message: String, _ transactions: [VerifiedTransaction] = [],
        unreadableCancellationIds: [String] = []
    ) -> Verdict {
        var shown = transactions
        for index in shown.indices {
            shown[index].creditable = false
            if shown[index].notCreditableReason == nil { shown[index].notCreditableReason = .rejected }
        }
        return Verdict(
            outcome: .rejected, reason: reason, message: message, transactions: shown,
            unreadableCancellationIds: unreadableCancellationIds)
    }
}
