import ReceiptModel

/// Which purchase event an App Store Server Notification V2 becomes: a pure table over Apple's `notificationType`
/// (§3.3 of the App Store reference), refined by the subtype where Apple's documentation says money moves
/// differently. The subtype travels in the event unchanged so a crediting service can refine further (for example
/// `DID_FAIL_TO_RENEW` / `GRACE_PERIOD` keeps access).
///
/// - `credit`: `ONE_TIME_CHARGE`, `SUBSCRIBED`, `DID_RENEW`, `OFFER_REDEEMED` (but its `DOWNGRADE`), and
///   `DID_CHANGE_RENEWAL_PREF` / `UPGRADE`: an upgrade takes effect at once, Apple charges a new period (the
///   notification's transaction) and refunds the unused part of the old one, which later results mark
///   `is_upgraded`, not creditable
/// - `debit`: `REFUND`
/// - `recredit`: `REFUND_REVERSED`
/// - `revoke`: `REVOKE`
/// - `subscription_status`: `EXPIRED`, `DID_FAIL_TO_RENEW`, `GRACE_PERIOD_EXPIRED`, `DID_CHANGE_RENEWAL_STATUS`,
///   `DID_CHANGE_RENEWAL_PREF` (a downgrade or a cancelled downgrade: it takes effect at the next renewal, which
///   arrives as `DID_RENEW`), `OFFER_REDEEMED` / `DOWNGRADE` (likewise), `RENEWAL_EXTENDED`, `RENEWAL_EXTENSION`,
///   `PRICE_INCREASE`
/// - `consumption_request`: `CONSUMPTION_REQUEST`
/// - `test`: `TEST`
/// - `info`: `REFUND_DECLINED`, `EXTERNAL_PURCHASE_TOKEN` (every subtype: `UNREPORTED`, `ACTIVE_TOKEN_REMINDER`,
///   `CREATED`; External Purchase API tokens, no App Store money), `RESCIND_CONSENT` (a parent or guardian withdrew
///   consent for a child's use of the app: an account matter, no money moves; the event carries no transaction but
///   the `app_transaction_id` of its `appData`, and a crediting service that must act on it keys on
///   `notification_type`; not a type of its own so that the event
///   types stay the contract's), `METADATA_UPDATE`, `MIGRATION`, `PRICE_CHANGE` (Advanced Commerce API only: no
///   App Store transaction to credit), and any type Apple adds later
///
/// A family-shared transaction (`inAppOwnershipType` `FAMILY_SHARED`) keeps its event type: the event says
/// `family_shared: true`, which means "grant the entitlement, count no payment".
public enum NotificationEventMapping {
    /// The event type of every notification type known when this was written.
    public static let table: [String: PurchaseEventType] = [
        "ONE_TIME_CHARGE": .credit,
        "SUBSCRIBED": .credit,
        "DID_RENEW": .credit,
        "OFFER_REDEEMED": .credit,
        "REFUND": .debit,
        "REFUND_REVERSED": .recredit,
        "REVOKE": .revoke,
        "EXPIRED": .subscriptionStatus,
        "DID_FAIL_TO_RENEW": .subscriptionStatus,
        "GRACE_PERIOD_EXPIRED": .subscriptionStatus,
        "DID_CHANGE_RENEWAL_STATUS": .subscriptionStatus,
        "DID_CHANGE_RENEWAL_PREF": .subscriptionStatus,
        "RENEWAL_EXTENDED": .subscriptionStatus,
        "RENEWAL_EXTENSION": .subscriptionStatus,
        "PRICE_INCREASE": .subscriptionStatus,
        "CONSUMPTION_REQUEST": .consumptionRequest,
        "TEST": .test,
        "REFUND_DECLINED": .info,
        "EXTERNAL_PURCHASE_TOKEN": .info,
        "RESCIND_CONSENT": .info,
        "METADATA_UPDATE": .info,
        "MIGRATION": .info,
        "PRICE_CHANGE": .info,
    ]

    /// The type/subtype pairs whose event differs from their type's (`"TYPE/SUBTYPE"`).
    public static let subtypeTable: [String: PurchaseEventType] = [
        "DID_CHANGE_RENEWAL_PREF/UPGRADE": .credit,
        "OFFER_REDEEMED/DOWNGRADE": .subscriptionStatus,
    ]

    /// The event type for `notificationType` and `subtype`: `info` for a type not in the table, so a type Apple adds
    /// later is never a failure.
    public static func eventType(notificationType: String, subtype: String?) -> PurchaseEventType {
        if let subtype, let refined = subtypeTable[notificationType + "/" + subtype] { return refined }
        return table[notificationType] ?? .info
    }

    /// Whether an event of `type` is about money or an entitlement, so it is useless without the notification's
    /// verified transaction (a crediting service could not tell what to credit, take back or withdraw).
    public static func requiresTransaction(_ type: PurchaseEventType) -> Bool {
        switch type {
        case .credit, .debit, .recredit, .revoke: true
        case .subscriptionStatus, .consumptionRequest, .test, .info: false
        }
    }
}
