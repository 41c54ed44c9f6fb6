import LedgerRules
import ReceiptModel

/// A result (`RESULTS_TOPIC`) as the ledger reads it: ReceiptModel's strict reading (`VerificationResultJSON.read`,
/// its members read through this value), each transaction's purchase key derived from its environment and ids.
@dynamicMemberLookup
struct LedgerResult: Sendable {
    /// The result as written: `submissionId`, `outcome`, `userId`, `clientId`, `verifiedAtMs`, `environment` (Apple's,
    /// `Production` or `Sandbox`; null on results without a verdict).
    let written: VerificationResultJSON.Members
    var transactions: [LedgerTransaction]

    init(_ read: VerificationResultJSON.Members) throws(UnreadableMessage) {
        written = read
        transactions = read.transactions.map(LedgerTransaction.init)
        for index in transactions.indices {
            try transactions[index].derivePurchaseKey(environment: read.environment)
        }
    }

    subscript<Value>(dynamicMember member: KeyPath<VerificationResultJSON.Members, Value>) -> Value {
        written[keyPath: member]
    }

    /// The owner the contract names: `user_id`, else `client_id` (empty strings count as absent).
    var owner: String? {
        if let userId = written.userId, !userId.isEmpty { return userId }
        if let clientId = written.clientId, !clientId.isEmpty { return clientId }
        return nil
    }
}

/// A purchase event (`EVENTS_TOPIC`) as the ledger reads it: ReceiptModel's strict reading (`PurchaseEventJSON.read`,
/// its members read through this value: `eventId`, `type`, `signedDateMs`, `subtype`, `notificationType`, ...), the
/// transaction's purchase key derived from its environment and ids.
@dynamicMemberLookup
struct LedgerEvent: Sendable {
    let written: PurchaseEventJSON.Members
    var transaction: LedgerTransaction?
    /// Apple's `data.status`.
    var subscriptionStatus: Int?

    init(_ read: PurchaseEventJSON.Members) throws(UnreadableMessage) {
        written = read
        transaction = read.transaction.map(LedgerTransaction.init)
        subscriptionStatus = read.subscriptionStatus.map { Int(clamping: $0) }
        try transaction?.derivePurchaseKey(environment: read.environment)
    }

    subscript<Value>(dynamicMember member: KeyPath<PurchaseEventJSON.Members, Value>) -> Value {
        written[keyPath: member]
    }

    /// The event reports an upgrade (`DID_CHANGE_RENEWAL_PREF` or `OFFER_REDEEMED` with subtype `UPGRADE`): the
    /// period it credits replaces the one it overlaps.
    var reportsUpgrade: Bool { written.subtype == "UPGRADE" }

    /// A parent or guardian withdrew consent for the app (`RESCIND_CONSENT`, an `info` event).
    var rescindsConsent: Bool { written.type == "info" && written.notificationType == "RESCIND_CONSENT" }
}

/// A message read once, with ReceiptModel's strict readers (the lean `JSONParser`: the message's shape is fixed, so
/// no Codable machinery); an `UnreadableMessage` is the dead-letter reason.
enum LedgerDecoding {
    static func result(_ bytes: [UInt8]) throws(UnreadableMessage) -> LedgerResult {
        try LedgerResult(VerificationResultJSON.read(bytes))
    }

    static func event(_ bytes: [UInt8]) throws(UnreadableMessage) -> LedgerEvent {
        try LedgerEvent(PurchaseEventJSON.read(bytes))
    }
}
