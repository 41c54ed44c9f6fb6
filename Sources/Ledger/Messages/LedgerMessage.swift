import Foundation
import LedgerRules
import ReceiptModel

/// A result (`RESULTS_TOPIC`) as the ledger reads it.
struct LedgerResult: Decodable, Sendable {
    var schemaVersion: Int
    var submissionId: String
    var outcome: String
    var userId: String?
    var clientId: String?
    var transactions: [LedgerTransaction]
    var verifiedAtMs: Int64?
    /// Apple's environment (`Production`, `Sandbox`); null on results without a verdict.
    var environment: String?

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case submissionId = "submission_id"
        case outcome
        case userId = "user_id"
        case clientId = "client_id"
        case transactions
        case verifiedAtMs = "verified_at_ms"
        case environment
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        schemaVersion = try c.decode(Int.self, forKey: .schemaVersion)
        guard schemaVersion == 1 else { throw UnreadableMessage("unknown schema_version \(schemaVersion)") }
        submissionId = try c.decode(String.self, forKey: .submissionId)
        outcome = try c.decode(String.self, forKey: .outcome)
        userId = try c.decodeIfPresent(String.self, forKey: .userId)
        clientId = try c.decodeIfPresent(String.self, forKey: .clientId)
        transactions = try c.decodeIfPresent([LedgerTransaction].self, forKey: .transactions) ?? []
        verifiedAtMs = try c.decodeIfPresent(Int64.self, forKey: .verifiedAtMs)
        environment = try c.decodeIfPresent(String.self, forKey: .environment)
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
struct LedgerEvent: Decodable, Sendable {
    var schemaVersion: Int
    var eventId: String
    var type: String
    var transaction: LedgerTransaction?
    var subscriptionStatus: Int?
    var receivedAtMs: Int64?
    /// When Apple signed the notification: money events of one purchase take effect in this order.
    var signedDateMs: Int64?
    var environment: String?
    /// Apple's `subtype` (`UPGRADE` is an upgrade's evidence).
    var subtype: String?

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case eventId = "event_id"
        case type, transaction
        case subscriptionStatus = "subscription_status"
        case receivedAtMs = "received_at_ms"
        case signedDateMs = "signed_date_ms"
        case environment, subtype
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        schemaVersion = try c.decode(Int.self, forKey: .schemaVersion)
        guard schemaVersion == 1 else { throw UnreadableMessage("unknown schema_version \(schemaVersion)") }
        eventId = try c.decode(String.self, forKey: .eventId)
        guard !eventId.isEmpty else { throw UnreadableMessage("event_id is empty") }
        type = try c.decode(String.self, forKey: .type)
        transaction = try c.decodeIfPresent(LedgerTransaction.self, forKey: .transaction)
        subscriptionStatus = try c.decodeIfPresent(Int.self, forKey: .subscriptionStatus)
        receivedAtMs = try c.decodeIfPresent(Int64.self, forKey: .receivedAtMs)
        signedDateMs = try c.decodeIfPresent(Int64.self, forKey: .signedDateMs)
        environment = try c.decodeIfPresent(String.self, forKey: .environment)
        subtype = try c.decodeIfPresent(String.self, forKey: .subtype)
        try Identifier.check(eventId, "event_id")
        try transaction?.derivePurchaseKey(environment: environment)
    }

    /// The event reports an upgrade (`DID_CHANGE_RENEWAL_PREF` or `OFFER_REDEEMED` with subtype `UPGRADE`): the
    /// period it credits replaces the one it overlaps.
    var reportsUpgrade: Bool { subtype == "UPGRADE" }
}

/// Identifiers the database stores as text: a control character (a NUL, which libpq would cut the text at, or any
/// other C0/C1 control or DEL) makes the message unreadable instead of truncated or credited to another user.
enum Identifier {
    static func check(_ value: String?, _ member: String) throws(UnreadableMessage) {
        guard let value else { return }
        for scalar in value.unicodeScalars where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
            throw UnreadableMessage("\(member) contains a control character (U+\(hex(scalar.value)))")
        }
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

/// Why a message cannot be read: the dead-letter reason.
struct UnreadableMessage: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }

    /// A short reason for any decoding failure (which member, what was wrong), without the message's contents.
    static func reason(for error: any Error) -> String {
        if let unreadable = error as? UnreadableMessage { return unreadable.description }
        guard let decoding = error as? DecodingError else { return "not JSON" }
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch decoding {
        case .dataCorrupted(let context):
            if let underlying = context.underlyingError as? UnreadableMessage { return underlying.description }
            return context.codingPath.isEmpty ? "malformed JSON" : "unreadable value at \(path(context))"
        case .keyNotFound(let key, let context):
            let prefix = path(context)
            return "missing \(prefix.isEmpty ? "" : prefix + ".")\(key.stringValue)"
        case .typeMismatch(_, let context): return "wrong type at \(path(context))"
        case .valueNotFound(_, let context): return "null at \(path(context))"
        @unknown default: return "unreadable"
        }
    }
}

enum LedgerDecoding {
    static func result(_ bytes: [UInt8]) throws -> LedgerResult {
        try JSONDecoder().decode(LedgerResult.self, from: Data(bytes))
    }

    static func event(_ bytes: [UInt8]) throws -> LedgerEvent {
        try JSONDecoder().decode(LedgerEvent.self, from: Data(bytes))
    }
}
