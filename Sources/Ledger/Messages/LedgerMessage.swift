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

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case submissionId = "submission_id"
        case outcome
        case userId = "user_id"
        case clientId = "client_id"
        case transactions
        case verifiedAtMs = "verified_at_ms"
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

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case eventId = "event_id"
        case type, transaction
        case subscriptionStatus = "subscription_status"
        case receivedAtMs = "received_at_ms"
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
