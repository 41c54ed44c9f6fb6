import ReceiptModel
import ServiceSupport

/// The oracle for the messages' writers (`VerificationResultJSON`, `PurchaseEventJSON`, `VerifiedTransactionJSON`),
/// the only code that writes results and events: the bytes are exactly the ones `JSONEncoder` writes for the same
/// JSON (`MessageCoding`: sorted keys, its escaping, slashes unescaped), and every member the contract names is
/// written, null or not (absent values are never left out). With `Decodable` reading the bytes back to the value,
/// this pins every member's name, value and bytes.
enum WrittenJSON {
    /// `bytes` read as JSON and written again by `MessageCoding`: equal to `bytes` exactly when they are in its form.
    static func canonical(_ bytes: [UInt8]) throws -> [UInt8] {
        try MessageCoding.encode(try MessageCoding.decode(JSONValue.self, from: bytes))
    }

    /// The member names of every object in `bytes` that sits at a member named in `at` (or the top-level object for
    /// `nil`), arrays looked through.
    static func memberNames(_ bytes: [UInt8], at member: String? = nil) throws -> [Set<String>] {
        let root = try MessageCoding.decode(JSONValue.self, from: bytes)
        guard let member else { return names(root) }
        guard case .object(let members) = root, let value = members[member] else { return [] }
        if case .array(let elements) = value { return elements.flatMap(names) }
        return names(value)
    }

    private static func names(_ value: JSONValue) -> [Set<String>] {
        guard case .object(let members) = value else { return [] }
        return [Set(members.keys)]
    }

    /// The contract's members (schemas/*.json), each always written.
    static let result: Set<String> = [
        "app_transaction", "apple_status", "attempts", "bundle_id", "client_id", "environment", "message", "order_id",
        "outcome", "reason", "schema_version", "source", "submission_fingerprint", "submission_id", "transactions",
        "user_id", "verified_at_ms",
    ]
    static let transaction: Set<String> = [
        "app_account_token", "app_transaction_id", "billing_plan_type", "cancellation_date_ms", "cancellation_reason",
        "commitment_info", "credit", "credit_key", "creditable", "currency", "expires_date_ms",
        "in_app_ownership_type", "is_trial_period", "is_upgraded", "not_creditable_reason", "offer_discount_type",
        "offer_identifier", "offer_period", "offer_type", "original_transaction_id", "price", "product_id",
        "product_type", "purchase_date_ms", "quantity", "revocation_percentage", "revocation_type", "storefront",
        "storefront_id", "transaction_id", "transaction_reason", "web_order_line_item_id",
    ]
    static let appTransaction: Set<String> = [
        "app_apple_id", "app_transaction_id", "application_version", "bundle_id", "environment",
        "original_application_version", "original_platform", "original_purchase_date_ms", "preorder_date_ms",
        "receipt_creation_date_ms", "receipt_type", "signed_date_ms", "version_external_identifier",
    ]
    static let event: Set<String> = [
        "app_apple_id", "app_transaction_id", "bundle_id", "consumption_request_reason", "environment", "event_id",
        "family_shared", "notification_type", "received_at_ms", "renewal", "schema_version", "signed_date_ms",
        "subscription_status", "subtype", "transaction", "type",
    ]
    static let renewal: Set<String> = [
        "app_transaction_id", "auto_renew_product_id", "auto_renew_status", "currency", "expiration_intent",
        "grace_period_expires_date_ms", "is_in_billing_retry_period", "offer_discount_type", "offer_identifier",
        "offer_period", "offer_type", "renewal_billing_plan_type", "renewal_price",
    ]
}
