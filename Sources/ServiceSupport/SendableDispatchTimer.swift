import Dispatch

/// A Dispatch timer source kept where threads share it. Dispatch sources may be scheduled, resumed and cancelled from
/// any thread (libdispatch synchronizes them internally); the Swift overlay only does not declare them `Sendable`.
/// Invariant behind `@unchecked Sendable`: only those thread-safe operations are used through it.
public struct SendableDispatchTimer: @unchecked Sendable {
    public let source: any DispatchSourceTimer

    public init(_ source: any DispatchSourceTimer) {
        self.source = source
    }
}
