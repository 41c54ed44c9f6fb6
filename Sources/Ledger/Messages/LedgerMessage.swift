import LedgerRules
import ReceiptModel

/// A result (`RESULTS_TOPIC`) as the ledger reads it.
struct LedgerResult: Sendable {
    var schemaVersion: Int
    var submissionId: String
    var outcome: String
    var userId: String?
    var clientId: String?
    var transactions: [LedgerTransaction]
    var verifiedAtMs: Int64?
    /// Apple's environment (`Production`, `Sandbox`); null on results without a verdict.
    var environment: String?


    init(_ c: JSONFields) throws(UnreadableMessage) {
        schemaVersion = Int(try c.requiredInt64("schema_version"))
        guard schemaVersion == 1 else { throw UnreadableMessage("unknown schema_version \(schemaVersion)") }
        submissionId = try c.requiredString("submission_id")
        outcome = try c.requiredString("outcome")
        userId = try c.string("user_id")
        clientId = try c.string("client_id")
        transactions = []
        for fields in try c.objects("transactions") { transactions.append(try LedgerTransaction(fields)) }
        verifiedAtMs = try c.int64("verified_at_ms")
        environment = try c.string("environment")
        try Identifier.check(submissionId, "submission_id")
        try Identifier.check(userId, "user_id")
        try Identifier.check(clientId, "client_id")
        for index in transactions.indices {
            try transactions[index].derivePurchaseKey(environment: environment)
        }
    }

    /// The owner the contract names: `user_id`, else `client_id` (empty strings count as absent).
    var owner: String? {
        if let userId, !userId.isEmpty { return userId }
        if let clientId, !clientId.isEmpty { return clientId }
        return nil
    }
}

/// A purchase event (`EVENTS_TOPIC`) as the ledger reads it.
struct LedgerEvent: Sendable {
    var schemaVersion: Int
    var eventId: String
    var type: String
    var transaction: LedgerTransaction?
    var subscriptionStatus: Int?
    var receivedAtMs: Int64?
    /// When Apple signed the notification: money events of one purchase take effect in this order.
    var signedDateMs: Int64?
    var environment: String?
    var bundleId: String?
    /// Apple's `subtype` (`UPGRADE` is an upgrade's evidence).
    var subtype: String?
    /// Apple's `notificationType` (`RESCIND_CONSENT` withdraws consent).
    var notificationType: String?
    /// `RESCIND_CONSENT`'s app download (`appData`'s app transaction).
    var appTransactionId: String?
    /// A `consumption_request`'s `consumption_request_reason` (Apple's `consumptionRequestReason`, as Apple wrote
    /// it); absent or null on other events and older ones.
    var consumptionRequestReason: String?


    init(_ c: JSONFields) throws(UnreadableMessage) {
        schemaVersion = Int(try c.requiredInt64("schema_version"))
        guard schemaVersion == 1 else { throw UnreadableMessage("unknown schema_version \(schemaVersion)") }
        eventId = try c.requiredString("event_id")
        guard !eventId.isEmpty else { throw UnreadableMessage("event_id is empty") }
        type = try c.requiredString("type")
        transaction = try c.object("transaction").map { fields throws(UnreadableMessage) in try LedgerTransaction(fields) }
        subscriptionStatus = try c.int64("subscription_status").map { Int(clamping: $0) }
        receivedAtMs = try c.int64("received_at_ms")
        signedDateMs = try c.int64("signed_date_ms")
        environment = try c.string("environment")
        bundleId = try c.string("bundle_id")
        subtype = try c.string("subtype")
        notificationType = try c.string("notification_type")
        appTransactionId = try c.string("app_transaction_id")
        consumptionRequestReason = try c.string("consumption_request_reason")
        try Identifier.check(eventId, "event_id")
        try Identifier.check(appTransactionId, "app_transaction_id")
        try Identifier.check(consumptionRequestReason, "consumption_request_reason")
        try transaction?.derivePurchaseKey(environment: environment)
    }

    /// The event reports an upgrade (`DID_CHANGE_RENEWAL_PREF` or `OFFER_REDEEMED` with subtype `UPGRADE`): the
    /// period it credits replaces the one it overlaps.
    var reportsUpgrade: Bool { subtype == "UPGRADE" }

    /// A parent or guardian withdrew consent for the app (`RESCIND_CONSENT`, an `info` event).
    var rescindsConsent: Bool { type == "info" && notificationType == "RESCIND_CONSENT" }
}

/// Identifiers the database stores as text: a control character (`IdentifierText`: a NUL, which libpq would cut
/// the text at, or any other C0/C1 control or DEL) makes the message unreadable instead of truncated or credited to
/// another user.
enum Identifier {
    static func check(_ value: String?, _ member: String) throws(UnreadableMessage) {
        guard let value, let problem = IdentifierText.problem(field: member, value) else { return }
        throw UnreadableMessage(problem)
    }
}

/// Why a message cannot be read: the dead-letter reason.
struct UnreadableMessage: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A message read once, with the lean parser (`JSONParser`: the result's shape is fixed, so no Codable machinery).
enum LedgerDecoding {
    static func result(_ bytes: [UInt8]) throws(UnreadableMessage) -> LedgerResult {
        try LedgerResult(JSONFields.message(bytes))
    }

    static func event(_ bytes: [UInt8]) throws(UnreadableMessage) -> LedgerEvent {
        try LedgerEvent(JSONFields.message(bytes))
    }
}
