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

    /// A batch's offsets against the stored next offsets, as a table: below the next offset, applied before; at
    /// it, applied; above it, a jump: the partition stops there (nothing of it from the jump on is applied, even
    /// what follows contiguously), the others go on. A partition with nothing stored starts at its first record.
    @Test func offsetsAreAppliedOnlyInSequenceFromTheStoredOne() {
        let a = TopicPartition(topic: "r", partition: 0)
        let b = TopicPartition(topic: "r", partition: 1)
        let c = TopicPartition(topic: "e", partition: 0)
        typealias Walk = KafkaBinding.OffsetWalk
        struct Row {
            let name: String
            let offsets: [(partition: TopicPartition, offset: Int64)]
            let stored: [TopicPartition: Int64]
            let fresh: [Int]
            let alreadyApplied: Int
            let jumps: [KafkaBinding.OffsetGap]
            let next: [TopicPartition: Int64]
        }
        let rows = [
            Row(
                name: "contiguous from the stored offset", offsets: [(a, 5), (a, 6), (a, 7)], stored: [a: 5],
                fresh: [0, 1, 2], alreadyApplied: 0, jumps: [], next: [a: 8]),
            Row(
                name: "a redelivery below the stored offset, then on", offsets: [(a, 3), (a, 4), (a, 5)],
                stored: [a: 5], fresh: [2], alreadyApplied: 2, jumps: [], next: [a: 6]),
            Row(
                name: "after a seek back: the old records again, skipped", offsets: [(a, 5), (a, 6), (a, 5), (a, 6)],
                stored: [a: 5], fresh: [0, 1], alreadyApplied: 2, jumps: [], next: [a: 7]),
            Row(
                name: "the first record past the stored offset: held, nothing applied",
                offsets: [(a, 40), (a, 41)], stored: [a: 5], fresh: [], alreadyApplied: 0,
                jumps: [KafkaBinding.OffsetGap(partition: a, stored: 5, lowWatermark: 40)], next: [a: 5]),
            Row(
                name: "a jump within the batch: applied up to it, held from it",
                offsets: [(a, 5), (a, 6), (a, 90), (a, 7)], stored: [a: 5], fresh: [0, 1], alreadyApplied: 0,
                jumps: [KafkaBinding.OffsetGap(partition: a, stored: 7, lowWatermark: 90)], next: [a: 7]),
            Row(
                name: "nothing stored: starts at its first record (a new ledger), then contiguous",
                offsets: [(b, 120), (b, 121), (b, 130)], stored: [:], fresh: [0, 1], alreadyApplied: 0,
                jumps: [KafkaBinding.OffsetGap(partition: b, stored: 122, lowWatermark: 130)], next: [b: 122]),
            Row(
                name: "one partition jumps, the others go on", offsets: [(a, 9), (c, 0), (a, 10), (c, 1), (b, 3)],
                stored: [a: 5, c: 0, b: 3], fresh: [1, 3, 4], alreadyApplied: 0,
                jumps: [KafkaBinding.OffsetGap(partition: a, stored: 5, lowWatermark: 9)], next: [a: 5, b: 4, c: 2]),
        ]
        for row in rows {
            let walk = KafkaBinding.offsetWalk(row.offsets, stored: row.stored)
            #expect(walk.fresh == row.fresh, "\(row.name)")
            #expect(walk.alreadyApplied == row.alreadyApplied, "\(row.name)")
            #expect(walk.jumps == row.jumps, "\(row.name)")
            #expect(walk.next == row.next, "\(row.name)")
        }
        // The jump is accepted like a gap found at assignment: by its partition and stored offset.
        #expect(KafkaBinding.offsetWalk([(a, 40)], stored: [a: 5]).jumps.map(\.acceptance) == ["r:0:5"])
    }

    /// Partitions with a stored offset whose watermarks are unknown are not judged (so not started); those with
    /// nothing stored start at their beginning and need no judging.
    @Test func partitionsWithUnknownWatermarksAreNotJudged() {
        let a = TopicPartition(topic: "r", partition: 0)
        let b = TopicPartition(topic: "r", partition: 1)
        let c = TopicPartition(topic: "e", partition: 0)
        #expect(KafkaBinding.unjudgedPartitions(stored: [a: 3, b: 7, c: 1], watermarksKnown: [b]) == [c, a])
        #expect(KafkaBinding.unjudgedPartitions(stored: [a: 3], watermarksKnown: [a, b]).isEmpty)
        #expect(KafkaBinding.unjudgedPartitions(stored: [:], watermarksKnown: []).isEmpty)
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

    /// The store applies nothing past a jump in a partition's offsets (a position librdkafka reset past what
    /// retention deleted): the credit after it waits, the stored offset stays, the jump is reported; the other
    /// partitions of the same batch are applied. A partition never applied starts at its first record.
    @Test func theStoreAppliesNothingPastAJumpAndReportsIt() throws {
        let db = try LedgerDatabase("ledger_offset_jumps")
        typealias F = LedgerFixtures
        try db.applyResults(F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "k1")]))
        let results = TopicPartition(topic: F.topics.results, partition: 0)
        let jumped = LedgerRecord(
            topic: results.topic, partition: 0, offset: 40,
            value: F.result(submissionId: "s2", userId: "u1", transactions: [F.transaction(creditKey: "k2")]))
        let newPartition = LedgerRecord(
            topic: results.topic, partition: 1, offset: 700,
            value: F.result(submissionId: "s3", userId: "u2", transactions: [F.transaction(creditKey: "k3")]))
        let summary = try db.apply([jumped, newPartition])
        #expect(summary.offsetJumps == [KafkaBinding.OffsetGap(partition: results, stored: 1, lowWatermark: 40)])
        #expect(summary.applied == 1 && summary.alreadyApplied == 0)
        #expect(try db.user("u1").balance("gems") == 100, "nothing past the jump is applied")
        #expect(try db.user("u2").balance("gems") == 100, "a partition never applied starts at its first record")
        let stored = try db.connection.transaction { session throws(PostgresError) in
            try LedgerStore.storedOffsets([results, TopicPartition(topic: results.topic, partition: 1)], in: session)
        }
        #expect(stored == [results: 1, TopicPartition(topic: results.topic, partition: 1): 701])
        // Once accepted (the stored offset moved to the offset jumped to), the same record is applied.
        _ = try db.connection.transaction { session throws(PostgresError) in
            try KafkaBinding.acceptGaps(summary.offsetJumps, in: session, nowMs: 1)
        }
        let accepted = try db.apply([jumped])
        #expect(accepted.offsetJumps.isEmpty && accepted.applied == 1)
        #expect(try db.user("u1").balance("gems") == 200)
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
