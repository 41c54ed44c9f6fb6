import ServiceSupport

/// A purchase event's JSON, written directly: the same members, values and key order as `MessageCoding` (sorted
/// keys, absent values as null, slashes unescaped), without `JSONEncoder`'s generic machinery, which cost a fifth of
/// a notification's processing (events are written at thousands per second). `PurchaseEventJSONTests` check that it
/// decodes to the event it was written from and matches `MessageCoding`'s output member for member.
public enum PurchaseEventJSON {
    public static func encode(_ event: PurchaseEvent) -> [UInt8] {
        // Members in sorted key order (as `.sortedKeys` writes them); `PurchaseEventJSONTests` holds them to it.
        var out = JSONWriter(capacity: 1_536)
        out.member("app_apple_id", first: true)
        out.number(event.appAppleId)
        out.member("app_transaction_id")
        out.string(event.appTransactionId)
        out.member("bundle_id")
        out.string(event.bundleId)
        out.member("consumption_request_reason")
        out.string(event.consumptionRequestReason)
        out.member("environment")
        out.string(event.environment?.rawValue)
        out.member("event_id")
        out.string(event.eventId)
        out.member("family_shared")
        out.bool(event.familyShared)
        out.member("notification_type")
        out.string(event.notificationType)
        out.member("received_at_ms")
        out.number(event.receivedAtMs)
        out.member("renewal")
        if let renewal = event.renewal { write(renewal, to: &out) } else { out.null() }
        out.member("schema_version")
        out.number(Int64(event.schemaVersion))
        out.member("signed_date_ms")
        out.number(event.signedDateMs)
        out.member("subscription_status")
        out.number(event.subscriptionStatus.map(Int64.init))
        out.member("subtype")
        out.string(event.subtype)
        out.member("transaction")
        if let transaction = event.transaction { write(transaction, to: &out) } else { out.null() }
        out.member("type")
        out.string(event.type.rawValue)
        out.raw("}")
        return out.bytes
    }

    public static func write(_ transaction: VerifiedTransaction, to out: inout JSONWriter) {
        out.member("app_account_token", first: true)
        out.string(transaction.appAccountToken)
        out.member("app_transaction_id")
        out.string(transaction.appTransactionId)
        out.member("billing_plan_type")
        out.string(transaction.billingPlanType)
        out.member("cancellation_date_ms")
        out.number(transaction.cancellationDateMs)
        out.member("cancellation_reason")
        out.string(transaction.cancellationReason)
        out.member("commitment_info")
        write(transaction.commitmentInfo ?? .null, to: &out)
        out.member("credit")
        write(transaction.credit ?? .null, to: &out)
        out.member("credit_key")
        out.string(transaction.creditKey)
        out.member("creditable")
        out.bool(transaction.creditable)
        out.member("currency")
        out.string(transaction.currency)
        out.member("expires_date_ms")
        out.number(transaction.expiresDateMs)
        out.member("in_app_ownership_type")
        out.string(transaction.inAppOwnershipType)
        out.member("is_trial_period")
        out.bool(transaction.isTrialPeriod)
        out.member("is_upgraded")
        out.bool(transaction.isUpgraded)
        out.member("not_creditable_reason")
        out.string(transaction.notCreditableReason?.rawValue)
        out.member("offer_discount_type")
        out.string(transaction.offerDiscountType)
        out.member("offer_identifier")
        out.string(transaction.offerIdentifier)
        out.member("offer_period")
        out.string(transaction.offerPeriod)
        out.member("offer_type")
        out.number(transaction.offerType)
        out.member("original_transaction_id")
        out.string(transaction.originalTransactionId)
        out.member("price")
        out.number(transaction.price)
        out.member("product_id")
        out.string(transaction.productId)
        out.member("product_type")
        out.string(transaction.productType?.rawValue)
        out.member("purchase_date_ms")
        out.number(transaction.purchaseDateMs)
        out.member("quantity")
        out.number(Int64(transaction.quantity))
        out.member("revocation_percentage")
        out.number(transaction.revocationPercentage.map(Int64.init))
        out.member("revocation_type")
        out.string(transaction.revocationType)
        out.member("storefront")
        out.string(transaction.storefront)
        out.member("storefront_id")
        out.string(transaction.storefrontId)
        out.member("transaction_id")
        out.string(transaction.transactionId)
        out.member("transaction_reason")
        out.string(transaction.transactionReason)
        out.member("web_order_line_item_id")
        out.string(transaction.webOrderLineItemId)
        out.raw("}")
    }

    static func write(_ renewal: RenewalSummary, to out: inout JSONWriter) {
        out.member("app_transaction_id", first: true)
        out.string(renewal.appTransactionId)
        out.member("auto_renew_product_id")
        out.string(renewal.autoRenewProductId)
        out.member("auto_renew_status")
        out.number(renewal.autoRenewStatus.map(Int64.init))
        out.member("currency")
        out.string(renewal.currency)
        out.member("expiration_intent")
        out.number(renewal.expirationIntent.map(Int64.init))
        out.member("grace_period_expires_date_ms")
        out.number(renewal.gracePeriodExpiresDateMs)
        out.member("is_in_billing_retry_period")
        out.bool(renewal.isInBillingRetryPeriod)
        out.member("offer_discount_type")
        out.string(renewal.offerDiscountType)
        out.member("offer_identifier")
        out.string(renewal.offerIdentifier)
        out.member("offer_period")
        out.string(renewal.offerPeriod)
        out.member("offer_type")
        out.number(renewal.offerType)
        out.member("renewal_billing_plan_type")
        out.string(renewal.renewalBillingPlanType)
        out.member("renewal_price")
        out.number(renewal.renewalPrice)
        out.raw("}")
    }

    /// The catalog's opaque `credit`, object keys sorted.
    static func write(_ value: JSONValue, to out: inout JSONWriter) {
        switch value {
        case .null: out.null()
        case .bool(let flag): out.bool(flag)
        case .integer(let number): out.number(number)
        case .number:
            // Fractions are rare in a catalog: JSONEncoder decides their text, as for every other message.
            out.raw((try? MessageCoding.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "null")
        case .string(let text): out.string(text)
        case .array(let elements):
            out.raw("[")
            for (index, element) in elements.enumerated() {
                if index > 0 { out.raw(",") }
                write(element, to: &out)
            }
            out.raw("]")
        case .object(let members):
            out.raw("{")
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out.raw(",") }
                out.string(key)
                out.raw(":")
                write(members[key] ?? .null, to: &out)
            }
            out.raw("}")
        }
    }
}
