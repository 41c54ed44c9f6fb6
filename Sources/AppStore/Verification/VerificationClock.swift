import Dispatch

/// Time for `ReceiptVerifier`: now, and "run this later" without holding a thread. Tests inject a manual clock.
public protocol VerificationClock: Sendable {
    /// Monotonic now.
    func now() -> DispatchTime
    /// Runs `work` once `milliseconds` have passed, on any thread.
    func schedule(afterMs milliseconds: Int, _ work: @escaping @Sendable () -> Void)
}

/// The real clock: `DispatchTime.now()` and `asyncAfter` on a global queue (a timer, not a sleeping thread).
public struct DispatchVerificationClock: VerificationClock {
    public init() {}

    public func now() -> DispatchTime { .now() }

    public func schedule(afterMs milliseconds: Int, _ work: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(max(0, milliseconds)), execute: work)
    }
}
