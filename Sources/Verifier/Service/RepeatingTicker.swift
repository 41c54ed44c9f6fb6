import Dispatch
import Synchronization

/// Calls `action` every `interval` on a private queue until `close` (the engine's probe clock).
final class RepeatingTicker: Sendable {
    private let queue = DispatchQueue(label: "verifier-ticker")
    private let interval: DispatchTimeInterval
    private let stopped = Atomic<Bool>(false)
    private let action: @Sendable () -> Void

    init(interval: DispatchTimeInterval, action: @escaping @Sendable () -> Void) {
        self.interval = interval
        self.action = action
    }

    func start() {
        scheduleNext()
    }

    /// Ends the ticks: a tick already running finishes, none follows. Idempotent; the ticker does not start again.
    func close() {
        stopped.store(true, ordering: .relaxed)
    }

    private func scheduleNext() {
        queue.asyncAfter(deadline: .now() + interval) { [self] in
            guard !stopped.load(ordering: .relaxed) else { return }
            action()
            scheduleNext()
        }
    }
}
