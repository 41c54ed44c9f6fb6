import Dispatch
import ServiceSupport

/// A `ServiceClock` that tests move by hand: time stands still until `advance` or `passTime`, and scheduled work runs
/// only when the test moves time past it, on the test's thread. Wall and monotonic time move together.
public final class ManualClock: ServiceClock {
    private struct Timer {
        let dueNanoseconds: UInt64
        /// Registration order, so timers due at the same time run in the order they were scheduled.
        let sequence: UInt64
        let work: @Sendable () -> Void
    }

    private struct State {
        var wallMilliseconds: Int64
        var monotonicNanoseconds: UInt64
        var timers: [Timer] = []
        var nextSequence: UInt64 = 0
        var delays: [Duration] = []
    }

    private let state: Locked<State>

    /// - Parameters:
    ///   - wallMilliseconds: the wall clock at the start (2023-11-14 by default: a realistic epoch time).
    ///   - monotonicNanoseconds: the monotonic clock at the start (not 0, so "0 = unset" fields stay meaningful).
    public init(wallMilliseconds: Int64 = 1_700_000_000_000, monotonicNanoseconds: UInt64 = 1_000_000_000) {
        state = Locked(State(wallMilliseconds: wallMilliseconds, monotonicNanoseconds: monotonicNanoseconds))
    }

    public func wallMilliseconds() -> Int64 { state.withLock { $0.wallMilliseconds } }

    public func monotonicNanoseconds() -> UInt64 { state.withLock { $0.monotonicNanoseconds } }

    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) {
        state.withLock { state in
            state.delays.append(delay)
            state.timers.append(
                Timer(
                    dueNanoseconds: state.monotonicNanoseconds &+ delay.clampedNanoseconds,
                    sequence: state.nextSequence, work: work))
            state.nextSequence += 1
        }
    }

    /// Every delay `schedule` was asked for, in order (run or not).
    public var scheduledDelays: [Duration] { state.withLock { $0.delays } }

    /// Scheduled work not yet run.
    public var pendingTimers: Int { state.withLock { $0.timers.count } }

    /// The monotonic time `delay` from now, as a Dispatch deadline.
    public func deadline(after delay: Duration) -> DispatchTime {
        DispatchTime(uptimeNanoseconds: monotonicNanoseconds() &+ delay.clampedNanoseconds)
    }

    /// Moves time forward without running anything (time spent inside a call being simulated).
    public func passTime(_ duration: Duration) {
        state.withLock { state in
            state.monotonicNanoseconds &+= duration.clampedNanoseconds
            state.wallMilliseconds &+= duration.clampedMilliseconds
        }
    }

    /// Moves time forward by `duration`, then runs the work that is due at the new time, earliest first, on this
    /// thread. Work scheduled while these run waits for the next `advance`, even when it is already due.
    public func advance(by duration: Duration) {
        let due: [Timer] = state.withLock { state in
            state.monotonicNanoseconds &+= duration.clampedNanoseconds
            state.wallMilliseconds &+= duration.clampedMilliseconds
            let now = state.monotonicNanoseconds
            let due = state.timers.filter { $0.dueNanoseconds <= now }
            state.timers.removeAll { $0.dueNanoseconds <= now }
            return due.sorted { ($0.dueNanoseconds, $0.sequence) < ($1.dueNanoseconds, $1.sequence) }
        }
        for timer in due { timer.work() }
    }

    /// Jumps to each scheduled time in turn and runs its work, until nothing is scheduled.
    public func runUntilIdle() {
        while let work = state.withLock({ Self.takeNext(from: &$0, dueBy: .max) }) {
            work()
        }
    }

    /// Removes the earliest timer due by `limit` and moves the clocks to its due time when that is later.
    private static func takeNext(from state: inout State, dueBy limit: UInt64) -> (@Sendable () -> Void)? {
        guard
            let index = state.timers.indices.min(by: {
                (state.timers[$0].dueNanoseconds, state.timers[$0].sequence)
                    < (state.timers[$1].dueNanoseconds, state.timers[$1].sequence)
            }), state.timers[index].dueNanoseconds <= limit
        else { return nil }
        let timer = state.timers.remove(at: index)
        if timer.dueNanoseconds > state.monotonicNanoseconds {
            let step = timer.dueNanoseconds - state.monotonicNanoseconds
            state.monotonicNanoseconds = timer.dueNanoseconds
            state.wallMilliseconds &+= Int64(step / 1_000_000)
        }
        return timer.work
    }
}
