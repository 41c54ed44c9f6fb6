import Kafka
import Testing

@testable import Ledger

/// The partitions assigned while the database did not answer: added on assignment, forgotten on revocation, done
/// for exactly the snapshot the worker resolved. No database, no Kafka.
@Suite("awaiting partition starts")
struct AwaitingStartsTests {
    static let p0 = TopicPartition(topic: "results", partition: 0)
    static let p1 = TopicPartition(topic: "results", partition: 1)
    static let e0 = TopicPartition(topic: "events", partition: 0)

    @Test("assigned partitions await until the snapshot that held them is done")
    func addedThenDone() {
        var starts = AwaitingStarts()
        starts.add([Self.p0, Self.p1])
        #expect(starts.count == 2)
        #expect([Self.p0, Self.e0].filter { starts.tickets[$0] != nil } == [Self.p0])
        let snapshot = starts.tickets
        starts.done(snapshot)
        #expect(starts.isEmpty)
    }

    @Test("a partition assigned after the snapshot keeps awaiting")
    func addedAfterTheSnapshot() {
        var starts = AwaitingStarts()
        starts.add([Self.p0])
        let snapshot = starts.tickets
        starts.add([Self.e0])
        starts.done(snapshot)
        #expect(starts.tickets.keys.sorted() == [Self.e0])
    }

    @Test("revoked and assigned again while the worker read: awaits under its new ticket")
    func reassignedDuringTheRead() {
        var starts = AwaitingStarts()
        starts.add([Self.p0, Self.p1])
        let snapshot = starts.tickets
        starts.forget([Self.p0])
        starts.add([Self.p0])
        starts.done(snapshot)
        // p1 was resolved; p0's offsets were read for an assignment that no longer exists.
        #expect(starts.tickets.keys.sorted() == [Self.p0])
    }

    @Test("revoked: forgotten, its next owner reads the offsets")
    func revoked() {
        var starts = AwaitingStarts()
        starts.add([Self.p0, Self.p1])
        starts.forget([Self.p1, Self.e0])
        #expect(starts.tickets.keys.sorted() == [Self.p0])
        #expect(starts.tickets[Self.p1] == nil)
    }
}
