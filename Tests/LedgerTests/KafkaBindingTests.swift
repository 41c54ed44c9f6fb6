import Ledger
import Kafka
import Postgres
import Testing

/// The guard against the wrong database, as a table, and its storage against PostgreSQL.
@Suite struct KafkaBindingTests {
    @Test func theClusterDecision() {
        #expect(KafkaBinding.cluster(stored: nil, current: "c1", rebind: []) == .bind("c1"))
        #expect(KafkaBinding.cluster(stored: "c1", current: "c1", rebind: []) == .bound)
        #expect(KafkaBinding.cluster(stored: "c1", current: nil, rebind: []) == .bound)
        #expect(KafkaBinding.cluster(stored: "c1", current: "c2", rebind: [.cluster]) == .rebind("c2"))
        guard case .refuse = KafkaBinding.cluster(stored: "c1", current: "c2", rebind: [.topics]) else {
            Issue.record("rebinding topics does not rebind the cluster")
            return
        }
        guard case .refuse(let message) = KafkaBinding.cluster(stored: "c1", current: "c2", rebind: []) else {
            Issue.record("another cluster must be refused")
            return
        }
        #expect(message.contains("LEDGER_REBIND=cluster"))
    }

    @Test func partitionsStoredBeyondTheirEndAreStale() {
        let a = TopicPartition(topic: "r", partition: 0)
        let b = TopicPartition(topic: "r", partition: 1)
        let c = TopicPartition(topic: "e", partition: 0)
        let stale = KafkaBinding.stalePartitions(
            stored: [a: 500, b: 10, c: 7], highWatermarks: [a: 20, b: 10])
        #expect(stale == [a], "b is at its end, c's end is not known")
        #expect(KafkaBinding.topicRefusal(["r[0]"]).contains("LEDGER_REBIND=topics"))
    }

    @Test func bindingsAndForgottenOffsetsAreStored() throws {
        let db = try LedgerDatabase("ledger_bindings")
        try db.applyResults(LedgerFixtures.result(submissionId: "s1", userId: "u1", transactions: []))
        try db.connection.transaction { session throws(PostgresError) in
            #expect(try KafkaBinding.storedCluster(in: session) == nil)
            try KafkaBinding.bindCluster("c1", in: session, nowMs: 1)
            try KafkaBinding.bindCluster("c2", in: session, nowMs: 2)
            #expect(try KafkaBinding.storedCluster(in: session) == "c2")
            try KafkaBinding.forgetOffsets(
                [TopicPartition(topic: LedgerFixtures.topics.results, partition: 0)], in: session)
        }
        #expect(try db.count("consumer_offsets") == 0)
    }
}
