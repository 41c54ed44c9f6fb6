import ReceiptModel

/// The verdict on a receipt Apple accepted: `verified`, or `rejected` with a reason; plus the transactions a result
/// carries.
public struct Verdict: Sendable, Equatable {
    public var outcome: Outcome
    public var reason: Reason?
    public var message: String?
    public var transactions: [VerifiedTransaction]

    public static func verified(_ transactions: [VerifiedTransaction]) -> Verdict {
        Verdict(outcome: .verified, reason: nil, message: nil, transactions: transactions)
    }

    public static func rejected(_ reason: Reason, _ message: String, _ transactions: [VerifiedTransaction] = [])
        -> Verdict
    {
        Verdict(outcome: .rejected, reason: reason, message: message, transactions: transactions)
    }
}

/// The checks between "Apple says the receipt is valid" and "credit it". Pure functions of Apple's answer, the
/// submission's expectations and the operator's policy; they do not depend on which backend answered.
///
/// Rules, in order (the first that applies decides):
/// 1. `bundle_id` absent or not in `ALLOWED_BUNDLE_IDS` -> `bundle_mismatch` (a valid receipt of another app).
/// 2. Sandbox receipt with `SANDBOX_POLICY=reject` -> `sandbox_not_allowed`.
/// 3. No transaction in `in_app` nor in `latest_receipt_info` -> `no_purchases`, or `invalid_receipt` when Apple
///    listed transactions but none was usable (entries without `transaction_id`, `product_id` or
///    `purchase_date_ms` are skipped everywhere).
/// 4. With an expected transaction id: it must be in `in_app` or `latest_receipt_info` (`in_app` wins when in
///    both), else `invalid_receipt` when an unusable entry carries that id, else `transaction_not_found`; its
///    product must equal the expected product when one is named, else `product_mismatch`; it must not carry a
///    cancellation date, else `refunded`. The result carries that one
///    transaction (also when rejected for product or refund, so the caller sees what Apple holds).
/// 5. Without one: the result carries every `in_app` transaction (or `latest_receipt_info` when `in_app` is empty,
///    as with `exclude-old-transactions` subscription receipts). With an expected product, some transaction must be
///    of that product (`product_mismatch`) and the transactions are narrowed to it. If every candidate carries a
///    cancellation date -> `refunded`; otherwise verified (cancelled ones keep their `cancellation_date_ms`, so a
///    crediting service can revoke them).
public enum VerdictRules {
    public static func evaluate(
        _ receipt: AppleReceipt, expectations: VerificationExpectations, policy: VerdictPolicy
    ) -> Verdict {
        let environment = receipt.environment
        guard let bundleId = receipt.bundleId, policy.allowedBundleIds.contains(bundleId) else {
            let shown = receipt.bundleId.map { "'\($0)'" } ?? "absent"
            return .rejected(.bundleMismatch, "the receipt's bundle_id (\(shown)) is not in ALLOWED_BUNDLE_IDS")
        }
        if environment == .sandbox, policy.sandboxPolicy == .reject {
            return .rejected(.sandboxNotAllowed, "a sandbox receipt, and SANDBOX_POLICY is reject")
        }
        if receipt.inApp.isEmpty, receipt.latestReceiptInfo.isEmpty {
            if receipt.unusableTransactionCount > 0 {
                return .rejected(
                    .invalidReceipt,
                    "none of the receipt's \(receipt.unusableTransactionCount) transaction(s) is usable "
                        + "(transaction_id, product_id or purchase_date_ms missing)")
            }
            return .rejected(.noPurchases, "the receipt holds no purchases")
        }

        if let expectedId = expectations.transactionId {
            guard
                let found = receipt.inApp.first(where: { $0.transactionId == expectedId })
                    ?? receipt.latestReceiptInfo.first(where: { $0.transactionId == expectedId })
            else {
                if receipt.unusableTransactionIds.contains(expectedId) {
                    return .rejected(
                        .invalidReceipt,
                        "transaction \(expectedId) is in the receipt without a usable product_id or purchase_date_ms")
                }
                return .rejected(.transactionNotFound, "transaction \(expectedId) is not in the receipt")
            }
            let normalized = [normalize(found, environment)]
            if let expectedProduct = expectations.productId, found.productId != expectedProduct {
                return .rejected(
                    .productMismatch,
                    "transaction \(expectedId) is for product '\(found.productId)', not '\(expectedProduct)'",
                    normalized)
            }
            if found.isCancelled {
                return .rejected(.refunded, "transaction \(expectedId) was refunded or revoked", normalized)
            }
            return .verified(normalized)
        }

        var candidates = receipt.inApp.isEmpty ? receipt.latestReceiptInfo : receipt.inApp
        if let expectedProduct = expectations.productId {
            candidates = candidates.filter { $0.productId == expectedProduct }
            if candidates.isEmpty {
                return .rejected(.productMismatch, "the receipt holds no purchase of product '\(expectedProduct)'")
            }
        }
        let normalized = candidates.map { normalize($0, environment) }
        if candidates.allSatisfy(\.isCancelled) {
            return .rejected(.refunded, "every purchase in the receipt was refunded or revoked", normalized)
        }
        return .verified(normalized)
    }

    /// A transaction as the result message carries it, with its credit key.
    public static func normalize(_ transaction: AppleTransaction, _ environment: AppStoreEnvironment)
        -> VerifiedTransaction
    {
        VerifiedTransaction(
            transactionId: transaction.transactionId, originalTransactionId: transaction.originalTransactionId,
            productId: transaction.productId, quantity: transaction.quantity,
            purchaseDateMs: transaction.purchaseDateMs,
            expiresDateMs: transaction.expiresDateMs, cancellationDateMs: transaction.cancellationDateMs,
            cancellationReason: transaction.cancellationReason, webOrderLineItemId: transaction.webOrderLineItemId,
            inAppOwnershipType: transaction.inAppOwnershipType, isTrialPeriod: transaction.isTrialPeriod,
            environment: environment)
    }
}
