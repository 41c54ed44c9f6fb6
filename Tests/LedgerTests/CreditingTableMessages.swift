import Foundation
import LedgerRuleTables
import LedgerRules

/// A row of `CreditingTable` as the messages the pipeline writes: one purchase (transaction `t1` of subscription
/// `o1`; a subscription period `w1` when a claim has an expiry or the row upgrades it, else a one-off purchase), each
/// input the result or event that asks the rules for it.
///
/// - A result's claim is a verified result of its user (its `submission_id`, environment, ownership, credit shape,
///   quantity, expiry, purchase date), its Kafka timestamp the claim's time.
/// - An event's claim is a `credit` event; its owner is what the store finds: none for an owner the rules do not
///   know yet, else the owner the subscription's `original_transaction_id` is linked to (`ownerLink`: the link an
///   earlier purchase of the subscription made, written when the row's history has not made it).
/// - `debit` (with its `revocation_percentage`), `recredit`, `revoke`, `subscription_status` (with the expiry) are
///   events of those types, signed at `signed(atMs:)` when the input is signed, without `signed_date_ms` otherwise.
/// - `upgrade(newPurchaseDateMs:)` is Apple's evidence of one: a `credit` event with subtype `UPGRADE` of another
///   period of the subscription, of another product, bought at that time and granting nothing (`credit` null), so
///   that `UpgradeRule` finds this period replaced and no other money moves.
///
/// Every event has an `event_id` of its own (the rules see no duplicates: the store filters them before).
struct CreditingTableMessages {
    typealias F = LedgerFixtures

    let row: CreditingTable.Row
    /// The first claim: the purchase's product, credit, environment.
    let firstClaim: CreditClaim?
    let environment: PurchaseEnvironment
    let isPeriod: Bool

    init(_ row: CreditingTable.Row) {
        self.row = row
        let claims = row.inputs.compactMap(Self.claim)
        firstClaim = claims.first
        environment = firstClaim?.environment ?? .production
        isPeriod =
            claims.contains { $0.expiresDateMs != nil }
            || row.inputs.contains { if case .upgrade = Self.unsigned($0) { true } else { false } }
    }

    /// The purchase's key as the ledger derives it.
    var creditKey: String {
        isPeriod ? F.key("w1", environment: environment.rawValue) : "apple:\(environment.rawValue):o1"
    }

    /// The message that asks the rules for `input`, the `index`th of the row.
    struct Message {
        var topic: String
        var value: [UInt8]
        var timestampMs: Int64
        /// The owner the store must find for an event's claim (`CreditingTableMessages` explains).
        var ownerLink: String?
    }

    func message(for input: LedgerInput, at index: Int) -> Message {
        let signedAtMs: Int64? = if case .signed(let atMs, _) = input { atMs } else { nil }
        let cause = Self.unsigned(input)
        let eventId = "e\(index)"
        switch cause {
        case .credit(let claim):
            switch claim.source {
            case .result(let submissionId):
                return Message(
                    topic: F.topics.results,
                    value: F.result(
                        submissionId: submissionId, userId: claim.owner, transactions: [transaction(claim)],
                        environment: appleEnvironment),
                    timestampMs: claim.atMs)
            case .event:
                return Message(
                    topic: F.topics.events, value: event(eventId, "credit", transaction(claim), signedAtMs),
                    timestampMs: claim.atMs, ownerLink: claim.owner)
            }
        case .debit(let percentage):
            var refunded = transaction(firstClaim)
            refunded["revocation_percentage"] = percentage ?? NSNull()
            return eventMessage(event(eventId, "debit", refunded, signedAtMs))
        case .recredit:
            return eventMessage(event(eventId, "recredit", transaction(firstClaim), signedAtMs))
        case .revoke:
            return eventMessage(event(eventId, "revoke", transaction(firstClaim), signedAtMs))
        case .subscriptionStatus(let expiresDateMs):
            var renewed = transaction(firstClaim)
            renewed["expires_date_ms"] = expiresDateMs ?? NSNull()
            return eventMessage(event(eventId, "subscription_status", renewed, signedAtMs))
        case .upgrade(let newPurchaseDateMs):
            let replacement = F.transaction(
                creditKey: "upgrade-\(index)", originalTransactionId: "o1", productId: "p-upgrade-\(index)",
                credit: nil, expiresDateMs: newPurchaseDateMs + 1, purchaseDateMs: newPurchaseDateMs,
                writtenKey: F.key("upgrade-\(index)", environment: environment.rawValue), productType: nil)
            return Message(
                topic: F.topics.events, value: event(eventId, "credit", replacement, signedAtMs, subtype: "UPGRADE"),
                timestampMs: newPurchaseDateMs, ownerLink: firstClaim?.owner)
        case .signed:
            preconditionFailure("unsigned(_:) unwraps every signed input")
        }
    }

    /// The row's purchase as a transaction carrying `claim` (the first claim's for an event that is not a credit).
    private func transaction(_ claim: CreditClaim?) -> [String: Any] {
        F.transaction(
            creditKey: "t1", originalTransactionId: "o1", productId: claim?.productId ?? "p",
            quantity: Int(claim?.quantity ?? 1), credit: Self.json(claim?.credit ?? .nothing),
            expiresDateMs: claim?.expiresDateMs, purchaseDateMs: claim?.purchaseDateMs,
            ownership: claim?.ownership == .familyShared ? "FAMILY_SHARED" : "PURCHASED", writtenKey: creditKey,
            transactionId: "t1", periodId: .some(isPeriod ? "w1" : nil), productType: claim?.productKind?.rawValue)
    }

    private var appleEnvironment: String { environment == .sandbox ? "Sandbox" : "Production" }

    private func event(
        _ eventId: String, _ type: String, _ transaction: [String: Any], _ signedAtMs: Int64?, subtype: String? = nil
    ) -> [UInt8] {
        F.event(
            eventId: eventId, type: type, transaction: transaction, signedDateMs: signedAtMs, subtype: subtype,
            environment: appleEnvironment)
    }

    private func eventMessage(_ value: [UInt8]) -> Message {
        Message(topic: F.topics.events, value: value, timestampMs: CreditingTable.nowMs)
    }

    /// The `credit` member that the ledger reads as `shape` (an unknown shape's description is its JSON text).
    static func json(_ shape: CreditShape) -> Any? {
        switch shape {
        case .nothing: nil
        case .grant(.item(let name, let amount)): ["item": name, "amount": amount]
        case .grant(.entitlement(let name)): ["entitlement": name]
        case .unknown(let description): try! JSONSerialization.jsonObject(with: Data(description.utf8))
        }
    }

    static func unsigned(_ input: LedgerInput) -> LedgerInput {
        if case .signed(_, let inner) = input { return unsigned(inner) }
        return input
    }

    static func claim(_ input: LedgerInput) -> CreditClaim? {
        if case .credit(let claim) = unsigned(input) { return claim }
        return nil
    }
}
