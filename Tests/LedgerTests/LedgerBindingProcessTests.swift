import Foundation
import Postgres
import Testing
import TestSupport

/// The guard against the wrong database, with the real executable: a ledger database remembers the Kafka cluster it
/// applied, and how far into each partition; pointed at another cluster or a topic created again, the ledger refuses
/// to run (`/healthz` says why, nothing is applied) until `LEDGER_REBIND` says what to rebind.
@Suite(.serialized) struct LedgerBindingProcessTests {
    typealias F = LedgerFixtures
    typealias H = LedgerHarness

    func execute(_ harness: LedgerHarness, _ sql: String) throws {
        let connection = try PostgresConnection(connectionString: harness.postgres.connectionString())
        defer { connection.close() }
        try connection.execute(sql)
    }

    func health(_ harness: LedgerHarness, _ ledger: ServiceProcess) async throws -> TestHTTPResponse {
        try await harness.get(ledger, "/healthz", key: nil)
    }

    @Test func anotherClusterOrATopicCreatedAgainIsRefusedUntilRebound() async throws {
        let harness = try await LedgerHarness.start()
        defer { Task { await harness.shutdown() } }
        let first = try await harness.startLedger()
        try await harness.produce(H.resultsTopic, key: "u1", [
            F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "k1")]),
        ])
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 1 })
        let connection = try PostgresConnection(connectionString: harness.postgres.connectionString())
        defer { connection.close() }
        let bound = try #require(
            try connection.execute("SELECT value FROM kafka_bindings WHERE name = 'cluster_id'").rows.first?.string("value"))
        #expect(!bound.isEmpty, "the first start binds the database to the cluster it reads")
        _ = await first.stop()

        // Another cluster's ledger database.
        try execute(harness, "UPDATE kafka_bindings SET value = 'another-cluster'")
        let refused = try await ServiceProcess.start(
            .ledger, environment: harness.environment, name: "refused", waitUntilReady: false)
        #expect(await eventually(timeout: .seconds(30)) { (try? await health(harness, refused))?.status == 503 })
        #expect(String(decoding: try await health(harness, refused).body, as: UTF8.self).contains("LEDGER_REBIND=cluster"))
        try await harness.produce(H.resultsTopic, key: "u1", [
            F.result(submissionId: "s2", userId: "u1", transactions: [F.transaction(creditKey: "k2")]),
        ])
        _ = await refused.stop()
        #expect(harness.appliedOffsets() == 1, "a refusing ledger applies nothing")

        let rebound = try await ServiceProcess.start(
            .ledger, environment: harness.environment.merging(["LEDGER_REBIND": "cluster"]) { $1 }, name: "rebound")
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 2 })
        #expect(try harness.balances(item: "gems") == ["u1": 200])
        _ = await rebound.stop()

        // A topic created again: the database has applied more of a partition than the topic now holds.
        try execute(harness, "UPDATE consumer_offsets SET next_offset = next_offset + 1000")
        let stale = try await ServiceProcess.start(
            .ledger, environment: harness.environment, name: "stale", waitUntilReady: false)
        #expect(await eventually(timeout: .seconds(30)) { (try? await health(harness, stale))?.status == 503 })
        #expect(String(decoding: try await health(harness, stale).body, as: UTF8.self).contains("LEDGER_REBIND=topics"))
        _ = await stale.stop()

        let fromTheBeginning = try await ServiceProcess.start(
            .ledger, environment: harness.environment.merging(["LEDGER_REBIND": "topics"]) { $1 }, name: "again")
        // Applied again from the beginning: the two purchases dedupe on their state, nothing is credited twice.
        #expect(await eventually(timeout: .seconds(30)) { harness.appliedOffsets() == 2 })
        #expect(try harness.balances(item: "gems") == ["u1": 200])
        #expect(try await health(harness, fromTheBeginning).status == 200)
        _ = await fromTheBeginning.stop()
    }
}
