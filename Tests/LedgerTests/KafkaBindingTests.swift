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

    /// Stored offsets against the partitions' first retained offsets: below it, messages were deleted before they
    /// were applied (a gap); at or above it, or unknown either way, none.
    @Test func partitionsStoredBelowTheirFirstRetainedOffsetHaveAGap() {
        let a = TopicPartition(topic: "r", partition: 0)
        let b = TopicPartition(topic: "r", partition: 1)
        let c = TopicPartition(topic: "e", partition: 0)
        let d = TopicPartition(topic: "e", partition: 1)
        let gaps = KafkaBinding.offsetGaps(
            stored: [a: 3, b: 57, c: 0, d: 9], lowWatermarks: [a: 57, b: 57, c: 1])
        #expect(
            gaps == [
                KafkaBinding.OffsetGap(partition: c, stored: 0, lowWatermark: 1),
                KafkaBinding.OffsetGap(partition: a, stored: 3, lowWatermark: 57),
            ], "b starts at its first offset exactly; d's start is not known; in partition order")
        #expect(gaps[1].deletedOffsets == 54)
        #expect(gaps[1].acceptance == "r:0:3")
        // Only the gap named exactly is accepted: an entry for another stored offset is an old one.
        #expect(KafkaBinding.isAccepted(gaps[1], by: [a: 3]))
        #expect(!KafkaBinding.isAccepted(gaps[1], by: [a: 2]))
        #expect(!KafkaBinding.isAccepted(gaps[1], by: [b: 3]))
        let refusal = KafkaBinding.gapRefusal(gaps)
        #expect(refusal.contains("r[0] stored offset 3 is below its first retained offset 57"))
        #expect(refusal.contains("LEDGER_ACCEPT_OFFSET_GAP=e:0:0,r:0:3"))
        // The entries: topic:partition:stored offset.
        #expect(KafkaBinding.acceptedGap("iap.receipts.results:2:1200")?.partition
            == TopicPartition(topic: "iap.receipts.results", partition: 2))
        #expect(KafkaBinding.acceptedGap("iap.receipts.results:2:1200")?.stored == 1_200)
        for entry in ["r:2", "r:2:x", "r:-2:1", "r:2:-1", "r:2:1:1", "r r:2:1", ":2:1", ""] {
            #expect(KafkaBinding.acceptedGap(entry) == nil, "\(entry)")
        }
    }

    @Test func anAcceptedGapMovesTheStoredOffsetOnAndIsRecorded() throws {
        let db = try LedgerDatabase("ledger_offset_gaps")
        try db.applyResults(
            LedgerFixtures.result(submissionId: "s1", userId: "u1", transactions: []),
            LedgerFixtures.result(submissionId: "s2", userId: "u1", transactions: []))
        let partition = TopicPartition(topic: LedgerFixtures.topics.results, partition: 0)
        let gap = KafkaBinding.OffsetGap(partition: partition, stored: 2, lowWatermark: 40)
        let stale = KafkaBinding.OffsetGap(partition: partition, stored: 1, lowWatermark: 40)
        let accepted = try db.connection.transaction { session throws(PostgresError) in
            try KafkaBinding.acceptGaps([stale, gap], in: session, nowMs: 7)
        }
        #expect(accepted == [gap], "a gap found with another stored offset is not accepted")
        let stored = try db.connection.transaction { session throws(PostgresError) in
            try LedgerStore.storedOffsets([partition], in: session)
        }
        #expect(stored == [partition: 40])
        let row = try #require(try db.connection.execute("SELECT * FROM accepted_offset_gaps").rows.first)
        #expect(try row.string("topic") == partition.topic && row.int64("partition") == 0)
        #expect(try row.int64("stored_offset") == 2 && row.int64("low_watermark") == 40 && row.int64("accepted_at_ms") == 7)
        // Accepting it again (the setting left in place) finds another stored offset: nothing more.
        let again = try db.connection.transaction { session throws(PostgresError) in
            try KafkaBinding.acceptGaps([gap], in: session, nowMs: 8)
        }
        #expect(again.isEmpty)
        #expect(try db.count("accepted_offset_gaps") == 1)
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
