import Kafka
import Testing

@testable import Verifier

/// Messages of the direct topics (notifications) never wait for Apple, so the pending gate does not bound them: the
/// direct gate does, for their partitions only.
@Suite("DispatchState: the direct topics' gate")
struct DirectTopicGateTests {
    typealias State = DispatchState<Int>
    let notes0 = TopicPartition(topic: "notes", partition: 0)
    let notes1 = TopicPartition(topic: "notes", partition: 1)
    let receipts = Samples.receipts

    func makeState(directLimit: Int = 6) -> State {
        var state = State(
            limits: DispatchLimits(
                maxInFlight: 4, partitionWindow: 100, partitionResumeMark: 50, pendingLimit: 50, pendingResumeMark: 25,
                directLimit: directLimit),
            directTopics: ["notes"])
        _ = state.assign([notes0, notes1, receipts], nowNs: 0)
        return state
    }

    func paused(_ step: State.Step) -> Set<TopicPartition> {
        Set(step.controls?.actions.compactMap { if case .pause(let key) = $0 { key } else { nil } } ?? [])
    }

    func resumed(_ step: State.Step) -> Set<TopicPartition> {
        Set(step.controls?.actions.compactMap { if case .resume(let key) = $0 { key } else { nil } } ?? [])
    }

    @Test func theDirectPartitionsPauseTogetherAtTheLimitAndResumeAtHalf() throws {
        var state = makeState()
        var tickets: [MessageTicket] = []
        for offset in 0..<5 {
            let (ticket, step) = state.admit(offset % 2 == 0 ? notes0 : notes1, offset: Int64(offset))
            tickets.append(try #require(ticket))
            #expect(paused(step).isEmpty)
        }
        let (sixth, atLimit) = state.admit(notes1, offset: 5)
        tickets.append(try #require(sixth))
        // Both notification partitions, not the submissions partition.
        #expect(paused(atLimit) == [notes0, notes1])
        #expect(Set(state.pausedPartitions) == [notes0, notes1])
        // Three finish: 3 live is the resume mark (half of 6).
        #expect(resumed(state.complete(tickets[0])).isEmpty)
        #expect(resumed(state.complete(tickets[1])).isEmpty)
        #expect(resumed(state.complete(tickets[2])) == [notes0, notes1])
        #expect(state.pausedPartitions.isEmpty)
    }

    @Test func submissionsDoNotCountTowardsTheDirectLimit() throws {
        var state = makeState(directLimit: 2)
        for offset in 0..<10 {
            let (ticket, step) = state.admit(receipts, offset: Int64(offset))
            _ = try #require(ticket)
            #expect(paused(step).isEmpty)
        }
        _ = state.admit(notes0, offset: 0)
        #expect(paused(state.admit(notes0, offset: 1).1) == [notes0, notes1])
        #expect(!state.pausedPartitions.contains(receipts))
    }

    @Test func withoutDirectTopicsNothingIsGated() throws {
        var state = State(
            limits: DispatchLimits(
                maxInFlight: 4, partitionWindow: 100, partitionResumeMark: 50, pendingLimit: 50, pendingResumeMark: 25,
                directLimit: 2))
        _ = state.assign([notes0], nowNs: 0)
        for offset in 0..<10 { #expect(paused(state.admit(notes0, offset: Int64(offset)).1).isEmpty) }
    }
}
