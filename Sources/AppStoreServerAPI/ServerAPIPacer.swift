import Dispatch
import Synchronization
import ServiceSupport

/// `ServerAPIPacing` applied: admits App Store Server API calls from any thread. A call that must wait for a token
/// waits on a timer (the clock's `schedule`), never in a blocked thread; a call refused (held back after a 429, or
/// too late for its deadline) is told so at once. Safe to share between threads.
public final class ServerAPIPacer: Sendable {
    /// Why a call was not started.
    public enum Refusal: Sendable, Equatable {
        /// The endpoint is held back after a 429 for this many more milliseconds.
        case heldBack(remainingMs: Int)
        /// Its turn would come this many milliseconds from now, after the caller's deadline.
        case tooLate(waitMs: Int)
    }

    private let state: Locked<ServerAPIPacing>
    private let clock: any ServiceClock

    public init(pacing: ServerAPIPacing, clock: any ServiceClock = DispatchClock()) {
        state = Locked(pacing)
        self.clock = clock
    }

    /// Calls `start` once `key` may be called (now, on this thread, with `false`; or later on a timer, with `true`:
    /// it waited for a token), or `refused` (on this thread or the timer's). Exactly one of them is called, once. A
    /// call admitted after a wait is refused after all when a 429 put its endpoint on hold meanwhile.
    public func whenAdmitted(
        _ key: ServerAPIPacing.Key, deadline: DispatchTime?, start: @escaping @Sendable (_ waited: Bool) -> Void,
        refused: @escaping @Sendable (Refusal) -> Void
    ) {
        let now = clock.monotonicNanoseconds()
        let admission = state.withLock { $0.admit(key, nowNs: now, deadlineNs: deadline?.uptimeNanoseconds) }
        switch admission {
        case .start:
            start(false)
        case .startAfter(let nanoseconds):
            clock.schedule(after: .milliseconds(Self.milliseconds(rounding: nanoseconds))) { [self] in
                let later = clock.monotonicNanoseconds()
                if let held = state.withLock({ $0.holdRemaining(key, nowNs: later) }) {
                    refused(.heldBack(remainingMs: Self.milliseconds(rounding: held)))
                } else {
                    start(true)
                }
            }
        case .heldBack(let remaining):
            refused(.heldBack(remainingMs: Self.milliseconds(rounding: remaining)))
        case .tooLate(let wait):
            refused(.tooLate(waitMs: Self.milliseconds(rounding: wait)))
        }
    }

    /// Holds `key` back for `milliseconds` from now (after a 429). True when this started or extended the hold.
    @discardableResult
    public func holdBack(_ key: ServerAPIPacing.Key, forMs milliseconds: Int64) -> Bool {
        let until = clock.monotonicNanoseconds() &+ UInt64(max(0, milliseconds)) &* 1_000_000
        return state.withLock { $0.holdBack(key, untilNs: until) }
    }

    /// Milliseconds left of `key`'s hold, or nil.
    @_spi(Testing) public func holdRemainingMs(_ key: ServerAPIPacing.Key) -> Int? {
        let now = clock.monotonicNanoseconds()
        return state.withLock { $0.holdRemaining(key, nowNs: now) }.map { Self.milliseconds(rounding: $0) }
    }

    /// Every held key with the milliseconds left.
    public var currentHolds: [ServerAPIPacing.Key: Int] {
        let now = clock.monotonicNanoseconds()
        return state.withLock { $0.holds(nowNs: now) }.mapValues { Self.milliseconds(rounding: $0) }
    }

    static func milliseconds(rounding nanoseconds: UInt64) -> Int {
        Int(clamping: (nanoseconds + 999_999) / 1_000_000)
    }
}
