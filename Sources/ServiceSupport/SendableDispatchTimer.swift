import Dispatch

/// A Dispatch timer source kept where threads share it. Dispatch sources may be scheduled, resumed and cancelled from
/// any thread (libdispatch synchronizes them internally); the Swift overlay only does not declare them `Sendable`.
/// Invariant behind `@unchecked Sendable`: only those thread-safe operations are used through it.
public struct SendableDispatchTimer: @unchecked Sendable {
    public let source: any DispatchSourceTimer

    public init(_ source: any DispatchSourceTimer) {
        self.source = source
    }

    /// A timer scheduled on `queue` every `interval` (at least `minimum`), first one interval from now, each run late
    /// by at most `leeway` (a quarter of the interval when not given); it runs once `start` gives it its work (an
    /// owner whose work captures it makes the timer first). Cancel it to stop it.
    public static func repeating(
        every interval: Duration, minimum: Duration = .milliseconds(1), leeway: DispatchTimeInterval? = nil,
        on queue: DispatchQueue
    ) -> SendableDispatchTimer {
        let nanoseconds = Int(clamping: max(interval.clampedNanoseconds, minimum.clampedNanoseconds))
        let source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(
            deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds),
            leeway: leeway ?? .nanoseconds(nanoseconds / 4))
        return SendableDispatchTimer(source)
    }

    /// Starts running `work` at every tick.
    public func start(_ work: @escaping @Sendable () -> Void) {
        source.setEventHandler(handler: work)
        source.resume()
    }
}
