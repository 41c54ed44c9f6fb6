@testable import Kafka
import Testing

/// The follower's catch-up rule alone (no Kafka): caught up exactly when every initial partition's position reached
/// the high watermark recorded at its assignment.
@Suite("follower catch-up state")
struct FollowerCatchUpTests {
    @Test("caught up only once every initial partition reached its target, in any order")
    func everyPartition() {
        var state = FollowerCatchUp()
        var became = state.initialAssignment([(0, start: 5, target: 10), (1, start: 0, target: 3)])
        #expect(!became && !state.isCaughtUp)
        became = state.reached(partition: 0, nextOffset: 9)
        #expect(!became)
        became = state.reached(partition: 1, nextOffset: 3)
        #expect(!became && !state.isCaughtUp)
        became = state.reached(partition: 0, nextOffset: 10)
        #expect(became && state.isCaughtUp)
        // Stays caught up; later positions report nothing new.
        became = state.reached(partition: 0, nextOffset: 11)
        #expect(!became && state.isCaughtUp)
    }

    @Test("partitions starting at their target (empty, or started at the end) are reached at once")
    func nothingToRead() {
        var empty = FollowerCatchUp()
        let became = empty.initialAssignment([(0, start: 0, target: 0), (1, start: 7, target: 7)])
        #expect(became && empty.isCaughtUp)
        var none = FollowerCatchUp()
        let noPartitions = none.initialAssignment([])
        #expect(noPartitions)
    }

    @Test("a topic absent at the start has nothing to read back; an assignment before that keeps its targets")
    func absentTopic() {
        var absent = FollowerCatchUp()
        let became = absent.topicAbsentAtStart()
        #expect(became && absent.isCaughtUp)
        var assigned = FollowerCatchUp()
        _ = assigned.initialAssignment([(0, start: 0, target: 2)])
        let afterAssignment = assigned.topicAbsentAtStart()
        #expect(!afterAssignment && !assigned.isCaughtUp)
    }

    @Test("an unknown target is never reached until it is learned")
    func unknownTarget() {
        var state = FollowerCatchUp()
        _ = state.initialAssignment([(0, start: 0, target: nil)])
        var became = state.reached(partition: 0, nextOffset: 1_000_000)
        #expect(!became)
        #expect(state.remaining.keys.sorted() == [0])
        state.learnedTarget(partition: 0, target: 4)
        became = state.reached(partition: 0, nextOffset: 3)
        #expect(!became)
        became = state.reached(partition: 0, nextOffset: 4)
        #expect(became)
    }

    @Test("read-back: offsets below an unreached partition's target; nothing once it is reached")
    func readBack() {
        var state = FollowerCatchUp()
        _ = state.initialAssignment([(0, start: 0, target: 5), (1, start: 0, target: nil)])
        #expect(state.isReadBack(partition: 0, offset: 4))
        #expect(!state.isReadBack(partition: 0, offset: 5))
        #expect(state.isReadBack(partition: 1, offset: 99))
        #expect(!state.isReadBack(partition: 2, offset: 0))
        _ = state.reached(partition: 0, nextOffset: 5)
        #expect(!state.isReadBack(partition: 0, offset: 1))
    }
}
