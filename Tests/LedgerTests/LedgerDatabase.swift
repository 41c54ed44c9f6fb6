import Foundation
import Kafka
import Ledger
import LedgerRules
import Postgres
import TestSupport

/// A fresh, migrated ledger database on the shared test server, and a store that appends messages at the next
/// offset of their partition (like a topic would).
final class LedgerDatabase {
    let connection: PostgresConnection
    let connectionString: String
    let store: LedgerStore
    private var nextOffsets: [TopicPartition: Int64] = [:]

    init(
        _ name: String, policy: OwnershipPolicy = .keep, sandbox: SandboxPolicy = .separate,
        clawback: ClawbackPolicy = .floor, migrate: Bool = true
    ) throws {
        connectionString = try TestPostgresServer.freshDatabase(name)
        connection = try PostgresConnection(connectionString: connectionString)
        if migrate { try LedgerSchema.migrate(connection) }
        store = LedgerStore(topics: LedgerFixtures.topics, policy: policy, sandboxPolicy: sandbox, clawback: clawback)
    }

    /// The records `values` become when appended to `topic`'s `partition`, with Kafka timestamps `timestampMs`
    /// (5,000 + their offset when not given).
    func append(_ values: [[UInt8]], to topic: String, partition: Int32 = 0, timestampMs: Int64? = nil)
        -> [LedgerRecord]
    {
        let key = TopicPartition(topic: topic, partition: partition)
        return values.map { value in
            let offset = nextOffsets[key, default: 0]
            nextOffsets[key] = offset + 1
            return LedgerRecord(
                topic: topic, partition: partition, offset: offset, value: value,
                timestampMs: timestampMs ?? 5_000 + offset)
        }
    }

    @discardableResult
    func apply(_ records: [LedgerRecord]) throws -> BatchSummary {
        try connection.transaction { session throws(PostgresError) in
            try store.apply(records, in: session, nowMs: 9_000)
        }
    }

    @discardableResult
    func applyResults(_ values: [UInt8]...) throws -> BatchSummary {
        try apply(append(values, to: LedgerFixtures.topics.results))
    }

    @discardableResult
    func applyEvents(_ values: [UInt8]...) throws -> BatchSummary {
        try apply(append(values, to: LedgerFixtures.topics.events))
    }

    func user(_ userId: String) throws -> LedgerQueries.UserView {
        try LedgerQueries.user(userId, on: connection)
    }

    func purchase(_ creditKey: String) throws -> LedgerQueries.PurchaseView? {
        try LedgerQueries.purchase(creditKey, on: connection)
    }

    func count(_ table: String) throws -> Int64 {
        precondition(table.allSatisfy { $0.isLetter || $0 == "_" })
        return try connection.execute("SELECT count(*) AS n FROM \(table)").rows[0].int64("n")
    }
}
