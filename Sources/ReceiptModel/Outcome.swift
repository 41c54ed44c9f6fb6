/// The verdict class of a result message (`outcome`).
public enum Outcome: String, Codable, Sendable, CaseIterable {
    /// Apple and every check agree: the transactions may be credited.
    case verified
    /// A permanent no: resubmitting the same receipt will not change it.
    case rejected
    /// No verdict could be reached; the submission is also on the DLQ for replay.
    case failed
}

/// Why a result is not `verified` (`reason`). The raw values are part of the contract: never rename them.
public enum Reason: String, Codable, Sendable, CaseIterable {
    case invalidReceipt = "invalid_receipt"
    /// A signed transaction, notification or receipt whose signature or certificate chain does not verify.
    case invalidSignature = "invalid_signature"
    case bundleMismatch = "bundle_mismatch"
    case transactionNotFound = "transaction_not_found"
    case productMismatch = "product_mismatch"
    /// `PRODUCT_CATALOG_FILE` is set and no transaction of the submission is of a product it lists.
    case unknownProduct = "unknown_product"
    /// The transaction carries another `appAccountToken` than the submission's `expected_app_account_token`.
    case accountMismatch = "account_mismatch"
    case refunded
    case noPurchases = "no_purchases"
    case sandboxNotAllowed = "sandbox_not_allowed"
    case malformedSubmission = "malformed_submission"
    case appleUnavailable = "apple_unavailable"
    case configError = "config_error"

    /// The outcome a result with this reason carries: a permanent no, or no verdict at all.
    public var outcome: Outcome {
        switch self {
        case .invalidReceipt, .invalidSignature, .bundleMismatch, .transactionNotFound, .productMismatch,
            .unknownProduct, .accountMismatch, .refunded, .noPurchases, .sandboxNotAllowed:
            .rejected
        case .malformedSubmission, .appleUnavailable, .configError:
            .failed
        }
    }
}

/// The App Store environment that produced a verdict (`environment`).
public enum AppStoreEnvironment: String, Codable, Sendable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
}

/// What a verdict rests on (`source`).
public enum VerificationSource: String, Codable, Sendable, CaseIterable {
    /// Apple's legacy verifyReceipt answer.
    case verifyReceipt = "verify_receipt"
    /// An App Store Server API answer (Get Transaction Info, Get Transaction History), its signed data verified.
    case serverAPI = "server_api"
    /// A StoreKit 2 signed transaction checked locally only (no App Store Server API key configured, or
    /// `SIGNED_TRANSACTION_CONFIRM=never`).
    case signedTransaction = "signed_transaction"
}

/// What kind of in-app product a transaction is for (`product_type`).
/// Why a transaction is `creditable: false` (`not_creditable_reason`; null when creditable). A closed set: the
/// money rules (`VerdictRules`) decide it, the first that applies in this order.
public enum NotCreditableReason: String, Codable, Sendable, CaseIterable {
    /// Apple's data for the purchase shows a refund (a cancellation date or reason, a `REFUND_*` revocation type or a
    /// revocation percentage).
    case refunded
    /// Apple revoked a family-shared entitlement (`revocationType` `FAMILY_REVOKE`).
    case revoked
    /// A field money depends on is present but unreadable (a cancellation field, the whole entry, `quantity`,
    /// `is_upgraded`): fail closed.
    case unreadable
    /// The subscription period was replaced by an upgrade (`is_upgraded`); the upgrade's period is the one to credit.
    case upgraded
    /// `PRODUCT_CATALOG_FILE` is set and does not list the product.
    case unknownProduct = "unknown_product"
    /// A `FAMILY_SHARED` transaction whose catalog credit is an item (`{"item", "amount"}`): someone else paid, so
    /// it grants entitlements only, never items or currency.
    case familySharedItem = "family_shared_item"
    /// The result is `rejected` (its `reason` says why: the product or account did not match, ...), and the
    /// transaction would otherwise have been creditable.
    case rejected
}

/// `product_type` in this project's results and events (CONTRACT.md): closed, in the messages' snake_case. Not
/// `SignedData.ProductType`, which is Apple's open wire spelling (unknown values kept); `init(appleType:)` maps
/// Apple's spellings here.
public enum ProductType: String, Codable, Sendable, CaseIterable {
    case consumable
    case nonConsumable = "non_consumable"
    case autoRenewable = "auto_renewable"
    case nonRenewing = "non_renewing"

    /// Apple's spelling in signed transactions (`type`) and the App Store Server API (`productType` query values).
    public init?(appleType: String) {
        switch appleType {
        case "Consumable", "CONSUMABLE": self = .consumable
        case "Non-Consumable", "NON_CONSUMABLE": self = .nonConsumable
        case "Auto-Renewable Subscription", "AUTO_RENEWABLE": self = .autoRenewable
        case "Non-Renewing Subscription", "NON_RENEWABLE": self = .nonRenewing
        default: return nil
        }
    }
}
