import Kafka
import Testing

@testable import Verifier

@Suite("DispatchState: offsets, windows, in-flight limit, revoke")
struct DispatchStateTests {
    typealias State = DispatchState<Int>
    let p0 = Samples.receipts
    let p1 = Samples.receipts1

    func makeState(maxInFlight: Int = 8, window: Int = 100, pending: Int = 50) -> State {
        var state = State(
            limits: DispatchLimits(
                maxInFlight: maxInFlight, partitionWindow: window, partitionResumeMark: window / 2,
                pendingLimit: pending, pendingResumeMark: pending / 2))
        _ = state.assign([p0, p1], nowNs: 0)
        return state
    }

    func stores(_ step: State.Step) -> [Int64] {
        step.controls?.actions.compactMap {
            if case .storeOffset(_, let next, _) = $0 { return next }
            return nil
        } ?? []
    }

    @Test func storesOnlyTheContiguousCompletedPrefixAcrossGaps() throws {
        var state = makeState()
        let t10 = try #require(state.admit(p0, offset: 10).0)
        let t11 = try #require(state.admit(p0, offset: 11).0)
        let t15 = try #require(state.admit(p0, offset: 15).0)  // a gap: 12...14 never existed
        #expect(stores(state.complete(t11)).isEmpty)
        #expect(stores(state.complete(t15)).isEmpty)
        #expect(stores(state.complete(t10)) == [16])
        #expect(stores(state.complete(t10)).isEmpty)  // twice changes nothing
        #expect(state.liveCount() == 0)
    }

    @Test func theLastAdmittedOffsetDeliveredAgainIsIgnored() throws {
        var state = makeState()
        #expect(state.admit(p0, offset: 5).0 != nil)
        #expect(state.admit(p0, offset: 5).0 == nil)
        #expect(state.admit(TopicPartition(topic: "other", partition: 0), offset: 1).0 == nil)
    }

    @Test func aBackwardsOffsetRestartsThePartitionAndAbandonsTheOldPosition() throws {
        var state = makeState(maxInFlight: 1)
        let t5 = try #require(state.admit(p0, offset: 5).0)
        #expect(state.enqueue(t5, work: 5, nowNs: 0).dispatches.count == 1)  // at Apple
        let t6 = try #require(state.admit(p0, offset: 6).0)
        _ = state.enqueue(t6, work: 6, nowNs: 0)  // waiting for a slot
        let t7 = try #require(state.admit(p0, offset: 7).0)
        _ = state.hold(t7)  // a retry record not yet due

        let (reset, step) = state.admit(p0, offset: 2)
        let t2 = try #require(reset)
        #expect(
            step.positionReset
                == State.PositionReset(partition: p0, previousOffset: 7, newOffset: 2, abandonedInFlight: 1))
        #expect(Set(step.dropped) == [t6, t7])
        #expect(t2.epoch != t5.epoch)
        #expect(!state.isOwned(t5) && state.isOwned(t2))
        #expect(state.liveCount(in: [p0]) == 1)
        #expect(state.waitingForApple == 0)

        // The old round ends: its slot is freed, but nothing of the old position is ever stored.
        let dispatch = State.Dispatch(ticket: t5, work: 5, isProbe: false)
        _ = state.appleFinished(dispatch, appleAnswered: true, nowNs: 0)
        #expect(stores(state.complete(t5)).isEmpty)
        #expect(stores(state.complete(t2)) == [3])
        // The messages after it are admitted again in order.
        #expect(state.admit(p0, offset: 3).0 != nil)
    }

    @Test func neverMoreThanMaxInFlightAtAppleAndWaitingOnesFollowInOrder() throws {
        var state = makeState(maxInFlight: 2)
        var dispatched: [State.Dispatch] = []
        for offset in 0..<5 {
            let ticket = try #require(state.admit(p0, offset: Int64(offset)).0)
            dispatched += state.enqueue(ticket, work: offset, nowNs: 0).dispatches
        }
        #expect(dispatched.map(\.work) == [0, 1])
        #expect(state.appleInFlight == 2 && state.waitingForApple == 3)
        let next = state.appleFinished(dispatched[1], appleAnswered: true, nowNs: 0).dispatches
        #expect(next.map(\.work) == [2])
        #expect(state.appleInFlight == 2 && state.waitingForApple == 2)
    }

    @Test func aFullWindowPausesOnlyItsPartitionUntilTheResumeMark() throws {
        var state = makeState(window: 4)
        var tickets: [MessageTicket] = []
        var actions: [ControlAction] = []
        for offset in 0..<4 {
            let (ticket, step) = state.admit(p0, offset: Int64(offset))
            tickets.append(try #require(ticket))
            actions += step.controls?.actions ?? []
        }
        #expect(actions == [.pause(p0)])
        #expect(state.pausedPartitions == [p0])
        // Completing the later ones does not help: they wait behind offset 0 and still count.
        for ticket in tickets.dropFirst() {
            #expect(!(state.complete(ticket).controls?.actions.contains(.resume(p0)) ?? false))
        }
        let step = state.complete(tickets[0])
        #expect(step.controls?.actions.contains(.resume(p0)) == true)
        #expect(stores(step) == [4])
    }

    @Test func tooManyWaitingForAppleHoldsTheIntakeAndPausesNothingUntilTheResumeMark() throws {
        var state = makeState(maxInFlight: 1, pending: 4)
        var batches: [ControlBatch] = []
        var dispatches: [State.Dispatch] = []
        for offset in 0..<5 {
            let ticket = try #require(state.admit(offset % 2 == 0 ? p0 : p1, offset: Int64(offset / 2)).0)
            let step = state.enqueue(ticket, work: offset, nowNs: 0)
            dispatches += step.dispatches
            batches += [step.controls].compactMap { $0 }
        }
        // 4 wait for Apple: the intake is held (once), no partition paused (a pause would drop the prefetch).
        #expect(state.isIntakeHeld)
        #expect(state.pausedPartitions.isEmpty)
        #expect(batches.compactMap(\.holdsIntake) == [true])
        #expect(!batches.flatMap(\.actions).contains { if case .pause = $0 { true } else { false } })
        // Apple answers one at a time; the intake is released at 2 waiting (the resume mark), once.
        var released: [Bool] = []
        while state.isIntakeHeld, let dispatch = dispatches.first {
            dispatches.removeFirst()
            let finished = state.appleFinished(dispatch, appleAnswered: true, nowNs: 0)
            dispatches += finished.dispatches
            released += [finished.controls?.holdsIntake].compactMap { $0 }
        }
        #expect(released == [false])
        #expect(state.waitingForApple == 2)
    }

    /// A state whose breaker opens after `rounds` rounds without a verdict (half of them at least), probing after
    /// 1 s, doubling to 4 s.
    func makeBreakerState(rounds: Int, partitions: [TopicPartition]) -> State {
        var state = State(
            limits: DispatchLimits(maxInFlight: 8, partitionWindow: 100),
            breaker: AppleCircuitBreaker(
                configuration: .init(
                    windowSize: rounds, minimumObservations: rounds, failureRatio: 0.5,
                    initialProbeInterval: .seconds(1), maximumProbeInterval: .seconds(4))))
        _ = state.assign(partitions, nowNs: 0)
        return state
    }

    @Test func theResumeAfterEveryPartitionWasPausedWakesTheFetchersAndNoOtherDoes() throws {
        let second: UInt64 = 1_000_000_000
        var state = makeBreakerState(rounds: 2, partitions: [p0, p1])
        var batches: [ControlBatch] = []
        var dispatches: [State.Dispatch] = []
        for offset in 0..<2 {
            let ticket = try #require(state.admit(p0, offset: Int64(offset)).0)
            dispatches += state.enqueue(ticket, work: offset, nowNs: 0).dispatches
        }
        for dispatch in dispatches {
            batches += [state.appleFinished(dispatch, appleAnswered: false, nowNs: 0).controls].compactMap { $0 }
        }
        let waiting = try #require(state.admit(p1, offset: 0).0)
        batches += [state.enqueue(waiting, work: 9, nowNs: 0).controls].compactMap { $0 }
        #expect(Set(state.pausedPartitions) == [p0, p1])  // the breaker is open and a submission waits
        // The probe takes the waiting submission: nothing waits, so the partitions resume (and the breaker closes).
        let tick = state.tick(nowNs: second)
        batches += [tick.controls].compactMap { $0 }
        let probe = try #require(tick.dispatches.first)
        let closing = state.appleFinished(probe, appleAnswered: true, nowNs: second)
        #expect(closing.breakerTransition == .closed)
        batches += [closing.controls].compactMap { $0 }
        #expect(state.pausedPartitions.isEmpty)
        let resuming = batches.filter { $0.actions.contains(.resume(p0)) || $0.actions.contains(.resume(p1)) }
        #expect(resuming.count == 1)
        #expect(resuming.first?.wakesFetchers == true)
        #expect(batches.filter(\.wakesFetchers).count == 1)
        // A partition paused on its own (a held retry record) resumes without a wake: the others kept fetching.
        let held = try #require(state.admit(p1, offset: 9).0)
        #expect(state.hold(held).controls?.actions == [.pause(p1)])
        let released = try #require(state.release(held, work: 9, nowNs: second).controls)
        #expect(released.actions == [.resume(p1)])
        #expect(!released.wakesFetchers)
    }

    @Test func aHeldRetryRecordPausesItsPartitionUntilReleased() throws {
        var state = makeState()
        let ticket = try #require(state.admit(p1, offset: 7).0)
        #expect(state.hold(ticket).controls?.actions == [.pause(p1)])
        let released = state.release(ticket, work: 7, nowNs: 0)
        #expect(released.dispatches.map(\.work) == [7])
        #expect(released.controls?.actions == [.resume(p1)])
        #expect(state.release(ticket, work: 7, nowNs: 0).dispatches.isEmpty)  // once only
    }

    @Test func revokeDropsWaitingAndHeldWorkAndIgnoresLateCompletions() throws {
        var state = makeState(maxInFlight: 1)
        let inFlight = try #require(state.admit(p0, offset: 0).0)
        let dispatch = try #require(state.enqueue(inFlight, work: 0, nowNs: 0).dispatches.first)
        let waiting = try #require(state.admit(p0, offset: 1).0)
        _ = state.enqueue(waiting, work: 1, nowNs: 0)
        let held = try #require(state.admit(p0, offset: 2).0)
        _ = state.hold(held)
        let other = try #require(state.admit(p1, offset: 0).0)

        let step = state.beginRevoke([p0])
        #expect(Set(step.dropped) == [waiting, held])
        #expect(state.liveCount(in: [p0]) == 1)  // only the one at Apple
        #expect(state.admit(p0, offset: 3).0 == nil)
        #expect(!state.isCurrent(inFlight) && state.isOwned(inFlight))

        // The in-flight one finishes during the revoke wait: its offset is still stored.
        _ = state.appleFinished(dispatch, appleAnswered: true, nowNs: 0)
        #expect(stores(state.complete(inFlight)) == [1])
        state.finishRevoke([p0])
        #expect(!state.isOwned(inFlight))
        #expect(state.liveCount() == 1)
        #expect(state.isCurrent(other))

        // Assigned again: a new epoch; a stale ticket of the old one changes nothing.
        _ = state.assign([p0], nowNs: 0)
        let again = try #require(state.admit(p0, offset: 1).0)
        #expect(again.epoch != inFlight.epoch)
        #expect(stores(state.complete(waiting)).isEmpty)
        #expect(stores(state.complete(again)) == [2])
    }

    @Test func assignmentExplicitlyResumesOrPausesEachNewPartition() throws {
        var state = State(limits: DispatchLimits(maxInFlight: 4, partitionWindow: 8))
        let step = state.assign([p0], nowNs: 0)
        #expect(step.controls?.actions == [.resume(p0)])

        // The pause half: a partition assigned while the breaker is open with work waiting starts paused.
        var held = State(
            limits: DispatchLimits(maxInFlight: 8, partitionWindow: 100),
            breaker: AppleCircuitBreaker(
                configuration: .init(
                    windowSize: 2, minimumObservations: 2, failureRatio: 0.5, initialProbeInterval: .seconds(1),
                    maximumProbeInterval: .seconds(4))))
        #expect(held.assign([p0], nowNs: 0).controls?.actions == [.resume(p0)])
        var dispatches: [State.Dispatch] = []
        for offset in 0..<2 {
            let ticket = try #require(held.admit(p0, offset: Int64(offset)).0)
            dispatches += held.enqueue(ticket, work: offset, nowNs: 0).dispatches
        }
        #expect(dispatches.count == 2)
        let transitions = dispatches.compactMap {
            held.appleFinished($0, appleAnswered: false, nowNs: 0).breakerTransition
        }
        #expect(transitions == [.opened])
        let waiting = try #require(held.admit(p0, offset: 2).0)
        #expect(held.enqueue(waiting, work: 2, nowNs: 0).dispatches.isEmpty)
        #expect(held.pausedPartitions == [p0])
        #expect(held.assign([p1], nowNs: 0).controls?.actions == [.pause(p1)])
        #expect(Set(held.pausedPartitions) == [p0, p1])

        // While too many admitted messages wait for Apple (the pending gate) the intake is held instead, and a new
        // partition is resumed like the others.
        var crowded = State(
            limits: DispatchLimits(
                maxInFlight: 1, partitionWindow: 100, partitionResumeMark: 50, pendingLimit: 2, pendingResumeMark: 1))
        #expect(crowded.assign([p0], nowNs: 0).controls?.actions == [.resume(p0)])
        for offset in 0..<3 {
            let ticket = try #require(crowded.admit(p0, offset: Int64(offset)).0)
            _ = crowded.enqueue(ticket, work: offset, nowNs: 0)
        }
        #expect(crowded.isIntakeHeld)
        #expect(crowded.pausedPartitions.isEmpty)
        #expect(crowded.assign([p1], nowNs: 0).controls?.actions == [.resume(p1)])
    }

    @Test func stopPausesEverythingAndDropsWhatHasNotStarted() throws {
        var state = makeState(maxInFlight: 1)
        let first = try #require(state.admit(p0, offset: 0).0)
        let dispatch = try #require(state.enqueue(first, work: 0, nowNs: 0).dispatches.first)
        let second = try #require(state.admit(p1, offset: 0).0)
        _ = state.enqueue(second, work: 1, nowNs: 0)
        let step = state.stop()
        #expect(step.dropped == [second])
        #expect(Set(state.pausedPartitions) == [p0, p1])
        #expect(state.admit(p0, offset: 1).0 == nil)
        _ = state.appleFinished(dispatch, appleAnswered: true, nowNs: 0)
        #expect(stores(state.complete(first)) == [1])
        #expect(state.liveCount() == 0)
    }

    @Test func openBreakerHoldsWorkBackAndLetsOneProbeGoPerInterval() throws {
        let second: UInt64 = 1_000_000_000
        var state = makeBreakerState(rounds: 4, partitions: [p0])
        var dispatches: [State.Dispatch] = []
        for offset in 0..<4 {
            let ticket = try #require(state.admit(p0, offset: Int64(offset)).0)
            dispatches += state.enqueue(ticket, work: offset, nowNs: 0).dispatches
        }
        #expect(dispatches.count == 4)
        var transitions: [AppleCircuitBreaker.Transition] = []
        for dispatch in dispatches {
            if let transition = state.appleFinished(dispatch, appleAnswered: false, nowNs: 0).breakerTransition {
                transitions.append(transition)
            }
        }
        #expect(transitions == [.opened])

        let waiting = try #require(state.admit(p0, offset: 10).0)
        let enqueued = state.enqueue(waiting, work: 10, nowNs: 0)
        #expect(enqueued.dispatches.isEmpty)
        #expect(state.pausedPartitions == [p0])
        #expect(state.tick(nowNs: second / 2).dispatches.isEmpty)
        let probe = try #require(state.tick(nowNs: second).dispatches.first)
        #expect(probe.isProbe)
        // The probe fails: the next one only after twice the interval.
        _ = state.appleFinished(probe, appleAnswered: false, nowNs: 2 * second)
        let another = try #require(state.admit(p0, offset: 11).0)
        _ = state.enqueue(another, work: 11, nowNs: 2 * second)
        #expect(state.tick(nowNs: 3 * second).dispatches.isEmpty)
        let probe2 = try #require(state.tick(nowNs: 4 * second).dispatches.first)
        let closing = state.appleFinished(probe2, appleAnswered: true, nowNs: 4 * second)
        #expect(closing.breakerTransition == .closed)
        #expect(state.pausedPartitions.isEmpty)
    }
}
