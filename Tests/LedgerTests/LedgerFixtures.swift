import Foundation
import Ledger

/// Results and events as the pipeline writes them. A fixture transaction's `creditKey` label is its purchase id: the
/// ledger derives the key from the environment and the ids (`key(_:)`), as the pipeline does.
enum LedgerFixtures {
    static let topics = LedgerTopics(results: "iap.receipts.results", events: "iap.purchase.events")

    static var gems100: [String: Any] { ["item": "gems", "amount": 100] }
    static var pro: [String: Any] { ["entitlement": "pro"] }

    /// The key the ledger derives for the fixture purchase `label` (a period key: fixtures carry the label as the
    /// web order line item id).
    static func key(_ label: String, environment: String = "production") -> String {
        "apple:\(environment):period:\(label)"
    }

    static func transaction(
        creditKey: String, originalTransactionId: String? = nil, productId: String = "com.example.gems100",
        quantity: Int = 1, credit: Any? = gems100, creditable: Bool = true, expiresDateMs: Int64? = nil,
        appAccountToken: String? = nil, revocationPercentage: Int? = nil, purchaseDateMs: Int64? = 1_700_000_000_000,
        ownership: String = "PURCHASED", isUpgraded: Bool = false, writtenKey: String? = nil,
        transactionId: String? = nil, periodId: String?? = .none, productType: String? = "consumable"
    ) -> [String: Any] {
        let period: String? = periodId ?? creditKey
        return [
            "transaction_id": transactionId ?? creditKey + "-t",
            "original_transaction_id": originalTransactionId ?? NSNull(),
            "product_id": productId, "quantity": quantity, "purchase_date_ms": purchaseDateMs ?? NSNull(),
            "expires_date_ms": expiresDateMs ?? NSNull(), "cancellation_date_ms": NSNull(),
            "cancellation_reason": NSNull(), "web_order_line_item_id": period ?? NSNull(),
            "in_app_ownership_type": ownership, "is_trial_period": false,
            "app_account_token": appAccountToken ?? NSNull(), "product_type": productType ?? NSNull(),
            "credit_key": writtenKey ?? key(creditKey), "creditable": creditable, "credit": credit ?? NSNull(),
            "revocation_percentage": revocationPercentage ?? NSNull(), "is_upgraded": isUpgraded,
        ]
    }

    static func result(
        submissionId: String, userId: String?, transactions: [[String: Any]], outcome: String = "verified",
        clientId: String? = nil, environment: String = "Production"
    ) -> [UInt8] {
        json([
            "schema_version": 1, "submission_id": submissionId, "order_id": NSNull(), "user_id": userId ?? NSNull(),
            "client_id": clientId ?? NSNull(), "outcome": outcome, "reason": NSNull(), "source": "signed_transaction",
            "message": NSNull(), "apple_status": NSNull(), "environment": environment,
            "bundle_id": "com.example.app", "transactions": transactions, "submission_fingerprint": "00",
            "attempts": 1, "verified_at_ms": 1_700_000_000_000,
        ])
    }

    static func event(
        eventId: String, type: String, transaction: [String: Any]?, subscriptionStatus: Int? = nil,
        signedDateMs: Int64? = 1_700_000_000_000, subtype: String? = nil, environment: String = "Production",
        consumptionRequestReason: String? = nil
    ) -> [UInt8] {
        var event: [String: Any] = [
            "schema_version": 1, "event_id": eventId, "type": type, "notification_type": type.uppercased(),
            "subtype": subtype ?? NSNull(), "environment": environment, "bundle_id": "com.example.app",
            "app_apple_id": 1, "transaction": transaction ?? NSNull(), "renewal": NSNull(),
            "subscription_status": subscriptionStatus ?? NSNull(), "family_shared": false,
            "signed_date_ms": signedDateMs ?? NSNull(), "received_at_ms": 1_700_000_000_000,
        ]
        // Absent unless given: events written before it existed carry none, and the ledger takes them.
        if let consumptionRequestReason { event["consumption_request_reason"] = consumptionRequestReason }
        return json(event)
    }

    static func json(_ object: [String: Any]) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }
}
