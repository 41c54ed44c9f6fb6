import ServiceSupport

/// A purchase event (`EVENTS_TOPIC`) as JSON, written and read here only, so a member of the contract changes in one
/// place.
///
/// - The writer (`encode`, the verifier's and receipt-reconcile's): the same members, values and key order as
///   `MessageCoding` (sorted keys, absent values as null, slashes unescaped), without `JSONEncoder`'s generic
///   machinery, which cost a fifth of a notification's processing (events are written at thousands per second).
/// - The strict reader (`read`, the ledger's): the lean `JSONParser` (a duplicate member is malformed JSON), then
///   the members a crediting service reads, each with the contract's type (`VerifiedTransactionJSON` for the
///   transaction); only schema version 1 is read.
///
/// `PurchaseEventJSONTests` check that the bytes are `MessageCoding`'s; `MessageRoundTripTests` hold
/// `read(encode(e))` to `Members(e)`.
public enum PurchaseEventJSON {
    /// What the strict reader reads of an event, as written: `type` is the producer's text (a type this build does
    /// not know is read, not refused).
    public struct Members: Sendable, Equatable {
        public var schemaVersion: Int
        public var eventId: String
        public var type: String
        public var transaction: VerifiedTransactionJSON.Members?
        public var subscriptionStatus: Int64?
        public var receivedAtMs: Int64?
        /// When Apple signed the notification: money events of one purchase take effect in this order.
        public var signedDateMs: Int64?
        public var environment: String?
        public var bundleId: String?
        /// Apple's `subtype` (`UPGRADE` is an upgrade's evidence).
        public var subtype: String?
        /// Apple's `notificationType` (`RESCIND_CONSENT` withdraws consent).
        public var notificationType: String?
        /// `RESCIND_CONSENT`'s app download (`appData`'s app transaction).
        public var appTransactionId: String?
        /// A `consumption_request`'s `consumption_request_reason` (Apple's `consumptionRequestReason`, as Apple wrote
        /// it); absent or null on other events and older ones.
        public var consumptionRequestReason: String?

        /// What `read` gives for the bytes `encode` writes of `event` (an event of schema version 1).
        public init(_ event: PurchaseEvent) {
            schemaVersion = event.schemaVersion
            eventId = event.eventId
            type = event.type.rawValue
            transaction = event.transaction.map(VerifiedTransactionJSON.Members.init)
            subscriptionStatus = event.subscriptionStatus.map(Int64.init)
            receivedAtMs = event.receivedAtMs
            signedDateMs = event.signedDateMs
            environment = event.environment?.rawValue
            bundleId = event.bundleId
            subtype = event.subtype
            notificationType = event.notificationType
            appTransactionId = event.appTransactionId
            consumptionRequestReason = event.consumptionRequestReason
        }

        /// Reads the message `c` (members in this order, the first problem decides the reason).
        init(_ c: JSONFields) throws(UnreadableMessage) {
            schemaVersion = Int(try c.requiredInt64("schema_version"))
            guard schemaVersion == 1 else { throw UnreadableMessage("unknown schema_version \(schemaVersion)") }
            eventId = try c.requiredString("event_id")
            guard !eventId.isEmpty else { throw UnreadableMessage("event_id is empty") }
            type = try c.requiredString("type")
            transaction = try c.object("transaction").map { fields throws(UnreadableMessage) in
                try VerifiedTransactionJSON.read(fields)
            }
            subscriptionStatus = try c.int64("subscription_status")
            receivedAtMs = try c.int64("received_at_ms")
            signedDateMs = try c.int64("signed_date_ms")
            environment = try c.string("environment")
            bundleId = try c.string("bundle_id")
            subtype = try c.string("subtype")
            notificationType = try c.string("notification_type")
            appTransactionId = try c.string("app_transaction_id")
            consumptionRequestReason = try c.string("consumption_request_reason")
            try IdentifierText.check(eventId, "event_id")
            try IdentifierText.check(appTransactionId, "app_transaction_id")
            try IdentifierText.check(consumptionRequestReason, "consumption_request_reason")
        }
    }

    /// Reads an event message strictly.
    /// - Throws: `UnreadableMessage` naming the first problem (the ledger dead-letters the message with it).
    public static func read(_ bytes: [UInt8]) throws(UnreadableMessage) -> Members {
        try Members(JSONFields.message(bytes))
    }

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
        if let transaction = event.transaction {
            VerifiedTransactionJSON.write(transaction, to: &out)
        } else {
            out.null()
        }
        out.member("type")
        out.string(event.type.rawValue)
        out.raw("}")
        return out.bytes
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
}
