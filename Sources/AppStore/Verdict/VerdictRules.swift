import Catalog
import ReceiptModel
import ServiceSupport

/// The money rules: everything between "Apple accepted the proof" and "credit this". Pure functions of Apple's
/// evidence (`AppleReceipt`, from any source), the submission's expectations, the operator's policy and the product
/// catalog; `Tests/AppStoreTests/MoneyRulesTests.swift` is their specification, one table row per case.
///
/// Rules, in order (the first that applies decides):
/// 1. `bundle_id` absent or not in `ALLOWED_BUNDLE_IDS` -> `bundle_mismatch` (a valid receipt of another app).
/// 2. Apple says Sandbox and `SANDBOX_POLICY=reject` -> `sandbox_not_allowed`.
/// 3. No transaction in `in_app` nor in `latest_receipt_info` -> `no_purchases`, or `invalid_receipt` when Apple
///    listed transactions but none was usable (entries without `transaction_id`, `product_id` or
///    `purchase_date_ms` are skipped everywhere).
/// 4. `APP_ACCOUNT_TOKEN_POLICY=require` and the submission names no `expected_app_account_token` ->
///    `account_mismatch` (a purchase is only credited to the account the app bound it to).
/// 5. With an expected transaction id: it must be in `in_app` or `latest_receipt_info` (`in_app` wins when in
///    both), else `invalid_receipt` when an unusable entry carries that id, else `transaction_not_found`. Then, for
///    that transaction: its product must be the expected product (`product_mismatch`); its `app_account_token` must
///    equal the expected one when one is named (`account_mismatch`, also when it has none); it must not be refunded
///    or revoked (`refunded`); with a catalog, its product must be listed (`unknown_product`). The result carries
///    that one transaction, also when rejected; verified, it is creditable unless upgraded away or unreadable.
/// 6. Without one: the candidates are every `in_app` transaction (or `latest_receipt_info` when `in_app` is empty,
///    as with `exclude-old-transactions` subscription receipts), narrowed to the expected product
///    (`product_mismatch` when none is left) and to the expected `app_account_token` (`account_mismatch` when none is
///    left). Every candidate refunded or revoked -> `refunded`; nothing creditable and some product missing from the
///    catalog -> `unknown_product`; else verified, listing every candidate, the refunded, upgraded and unreadable
///    ones with `creditable: false`.
///
/// Per transaction:
/// - Its purchase is its `credit_key` (`PurchaseIdentity`: the subscription period's `web_order_line_item_id`, else
///   the `original_transaction_id`), and whatever Apple's data says about the purchase counts for every transaction
///   of it (`PurchaseEvidence`): a refunded original makes its restores non-creditable, an upgrade of a period seen
///   on one device counts on every device.
/// - Refunded or revoked when any of Apple's data for its purchase shows it: an `in_app` or `latest_receipt_info`
///   entry (Apple's current state, where a refund shows even when the submitted receipt predates it) carries a
///   cancellation date, a cancellation reason, a revocation type or percentage, or a cancellation field that could
///   not be read (fail closed); or an entry for its id could not be read at all.
/// - Upgraded when Apple says so (`is_upgraded`, `isUpgraded`): the period was replaced by the upgrade's new period,
///   which is the one to credit.
/// - `quantity` or `is_upgraded` present but unreadable: how much to credit is unknown (fail closed).
/// - `creditable`: not refunded or revoked, not upgraded, nothing unreadable, with a catalog listed in it, and not a
///   `FAMILY_SHARED` transaction whose credit is an item (a family member did not pay: entitlements only, never
///   items or currency; an entitlement credit stays creditable). Never true in a rejected verdict. A crediting
///   service grants `credit` x `quantity`.
/// - `not_creditable_reason`: why not, the first that applies: `refunded` or `revoked` (`FAMILY_REVOKE`) when
///   Apple's readable data shows it, `unreadable` (a cancellation field or entry that could not be read, then
///   `quantity` / `is_upgraded`), `upgraded`, `unknown_product`, `family_shared_item`; `rejected` for a transaction
///   of a rejected verdict that had none of these. Null exactly when creditable.
/// - `credit`: the catalog entry's `credit` object, unchanged; null without a catalog or for an unlisted product.
/// - `product_type`: Apple's (signed transactions), else the catalog entry's `type`, else `auto_renewable` when
///   Apple's data shows a subscription (an expires date or a web order line item id), else null.
/// - `app_account_token`: Apple's, lower-cased, from the transaction's entry or, for verifyReceipt, from its
///   `latest_receipt_info` entry; null when Apple's data has none.
/// - `credit_key`: `PurchaseIdentity.creditKey` with Apple's environment, from the transaction's ids alone (never the
///   catalog), so every source gives one purchase the same key.
public enum VerdictRules {
    public static func evaluate(
        _ receipt: AppleReceipt, expectations: VerificationExpectations, policy: VerdictPolicy,
        catalog: ProductCatalog? = nil
    ) -> Verdict {
        let environment = receipt.environment
        guard let bundleId = receipt.bundleId, policy.allowedBundleIds.contains(bundleId) else {
            let shown = receipt.bundleId.map { "'\($0)'" } ?? "absent"
            return .rejected(.bundleMismatch, "the receipt's bundle_id (\(shown)) is not in ALLOWED_BUNDLE_IDS")
        }
        if environment == .sandbox, policy.sandboxPolicy == .reject {
            return .rejected(.sandboxNotAllowed, "Apple says Sandbox, and SANDBOX_POLICY is reject")
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
        let evidence = PurchaseEvidence(receipt)
        let unreadable = evidence.unreadableIds
        func judge(_ transaction: AppleTransaction) -> Judged {
            Judged(evidence.merged(into: transaction), environment: environment, catalog: catalog)
        }
        func verified(_ transactions: [VerifiedTransaction]) -> Verdict {
            .verified(
                transactions, unreadableCancellationIds: unreadable,
                unreadableCreditingIds: evidence.unreadableCreditingIds)
        }
        if policy.appAccountTokenPolicy == .require, expectations.appAccountToken == nil {
            return .rejected(
                .accountMismatch,
                "APP_ACCOUNT_TOKEN_POLICY is require and the submission names no expected_app_account_token",
                unreadableCancellationIds: unreadable)
        }

        if let expectedId = expectations.transactionId {
            guard
                let found = receipt.inApp.first(where: { $0.transactionId == expectedId })
                    ?? receipt.latestReceiptInfo.first(where: { $0.transactionId == expectedId })
            else {
                if receipt.unusableTransactionIds.contains(expectedId) {
                    return .rejected(
                        .invalidReceipt,
                        "transaction \(expectedId) is in the receipt without a usable product_id or purchase_date_ms",
                        unreadableCancellationIds: unreadable)
                }
                return .rejected(
                    .transactionNotFound, "transaction \(expectedId) is not in the receipt",
                    unreadableCancellationIds: unreadable)
            }
            let judged = judge(found)
            let shown = [judged.transaction]
            if let expectedProduct = expectations.productId, found.productId != expectedProduct {
                return .rejected(
                    .productMismatch,
                    "transaction \(expectedId) is for product '\(found.productId)', not '\(expectedProduct)'", shown,
                    unreadableCancellationIds: unreadable)
            }
            if let expectedToken = expectations.appAccountToken, judged.transaction.appAccountToken != expectedToken {
                let carried =
                    judged.transaction.appAccountToken == nil
                    ? "carries no app_account_token" : "carries another app_account_token than expected"
                return .rejected(
                    .accountMismatch, "transaction \(expectedId) \(carried)", shown,
                    unreadableCancellationIds: unreadable)
            }
            if judged.refunded {
                return .rejected(
                    .refunded, "transaction \(expectedId) \(judged.refundDescription)", shown,
                    unreadableCancellationIds: unreadable)
            }
            if !judged.listed {
                return .rejected(
                    .unknownProduct, "product '\(found.productId)' is not in PRODUCT_CATALOG_FILE", shown,
                    unreadableCancellationIds: unreadable)
            }
            return verified(shown)
        }

        var candidates = receipt.inApp.isEmpty ? receipt.latestReceiptInfo : receipt.inApp
        if let expectedProduct = expectations.productId {
            candidates = candidates.filter { $0.productId == expectedProduct }
            if candidates.isEmpty {
                return .rejected(
                    .productMismatch, "the receipt holds no purchase of product '\(expectedProduct)'",
                    unreadableCancellationIds: unreadable)
            }
        }
        if let expectedToken = expectations.appAccountToken {
            candidates = candidates.filter { Judged.token(evidence.merged(into: $0)) == expectedToken }
            if candidates.isEmpty {
                return .rejected(
                    .accountMismatch, "no purchase in the receipt carries the expected app_account_token",
                    unreadableCancellationIds: unreadable)
            }
        }
        let judged = candidates.map(judge)
        let transactions = judged.map(\.transaction)
        if judged.allSatisfy(\.refunded) {
            return .rejected(
                .refunded, "every purchase in the receipt was refunded or revoked", transactions,
                unreadableCancellationIds: unreadable)
        }
        if !transactions.contains(where: \.creditable), judged.contains(where: { !$0.listed }) {
            let missing = Set(judged.filter { !$0.listed }.map(\.transaction.productId)).sorted()
            return .rejected(
                .unknownProduct,
                "no purchase is creditable: product(s) \(missing.map { "'\($0)'" }.joined(separator: ", ")) "
                    + "not in PRODUCT_CATALOG_FILE",
                transactions, unreadableCancellationIds: unreadable)
        }
        return verified(transactions)
    }

    /// One transaction as a result carries it, judged on its own data (refunds it shows, the catalog).
    public static func normalize(
        _ transaction: AppleTransaction, _ environment: AppStoreEnvironment, catalog: ProductCatalog? = nil
    ) -> VerifiedTransaction {
        Judged(transaction, environment: environment, catalog: catalog).transaction
    }

    /// A transaction judged: the result's form, plus why it is or is not creditable.
    private struct Judged {
        var transaction: VerifiedTransaction
        var refunded: Bool
        /// In the catalog, or no catalog configured.
        var listed: Bool
        /// Apple's data about it that could not be read (cancellation fields, or `entry` for a whole entry).
        var unreadable: [String]

        init(_ apple: AppleTransaction, environment: AppStoreEnvironment, catalog: ProductCatalog?) {
            let entry = catalog?[apple.productId]
            refunded = apple.showsCancellation
            unreadable = apple.unreadableCancellationFields
            listed = catalog == nil || entry != nil
            let subscription = apple.expiresDateMs != nil || apple.webOrderLineItemId != nil
            let reason = Self.notCreditableReason(apple, listed: listed, credit: entry?.credit)
            var fields = apple.fields
            fields.appAccountToken = Self.token(apple)
            fields.productType = apple.productType ?? entry?.type ?? (subscription ? .autoRenewable : nil)
            transaction = VerifiedTransaction(
                fields, creditable: reason == nil, credit: entry?.credit, notCreditableReason: reason,
                environment: environment)
        }

        /// Why `apple` is not creditable, the first rule that applies; nil when it is creditable.
        static func notCreditableReason(
            _ apple: AppleTransaction, listed: Bool, credit: JSONValue?
        ) -> NotCreditableReason? {
            if apple.showsCancellation {
                // Readable evidence of a refund or revocation decides; only unreadable fields: fail closed.
                let readable = apple.cancellationDateMs != nil || apple.cancellationReason != nil
                    || apple.revocationType != nil || apple.revocationPercentage != nil
                guard readable else { return .unreadable }
                return apple.revocationType == familyRevoke ? .revoked : .refunded
            }
            if !apple.unreadableCreditingFields.isEmpty { return .unreadable }
            if apple.isUpgraded { return .upgraded }
            if !listed { return .unknownProduct }
            if apple.inAppOwnershipType == familyShared, grantsItem(credit) { return .familySharedItem }
            return nil
        }

        static let familyShared = "FAMILY_SHARED"
        static let familyRevoke = "FAMILY_REVOKE"

        /// A catalog credit that grants an item or currency (`{"item": I, "amount": A}`), as opposed to an
        /// entitlement (`{"entitlement": E}`).
        static func grantsItem(_ credit: JSONValue?) -> Bool {
            guard case .object(let members)? = credit else { return false }
            return members["item"] != nil
        }

        var refundDescription: String {
            if unreadable.isEmpty { return "was refunded or revoked" }
            if unreadable == [PurchaseEvidence.unusableEntry] {
                return "has an entry in Apple's answer that could not be read (not creditable: it may show a refund)"
            }
            return "carries cancellation fields that could not be read ("
                + unreadable.filter { $0 != PurchaseEvidence.unusableEntry }.joined(separator: ", ")
                + "): not creditable until Apple's data is readable"
        }

        /// Apple's `appAccountToken`, lower-cased (UUIDs compare case-insensitively); nil when absent or empty.
        static func token(_ transaction: AppleTransaction) -> String? {
            guard let token = transaction.appAccountToken, !token.isEmpty else { return nil }
            return token.lowercased()
        }
    }
}
