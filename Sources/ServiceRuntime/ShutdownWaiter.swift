import Dispatch
import ServiceSupport

/// For the processes that serve until stopped without being a `ManagedService` (`receipt-tail`, `embedded-kafka`,
/// `fake-appstore`): the SIGTERM/SIGINT handler is installed when this is created, so a signal that comes while the
/// process is still starting is kept, and `wait()` returns the first signal's name (a second exits 1 at once:
/// `ShutdownSignal`). One per process; keep it alive until `wait()` returned.
public final class ShutdownWaiter: Sendable {
    private let signal: ShutdownSignal
    private let stop: DispatchSemaphore
    private let name: Locked<String>

    public init() {
        let stop = DispatchSemaphore(value: 0)
        let name = Locked("SIGTERM")
        self.stop = stop
        self.name = name
        self.signal = ShutdownSignal { received in
            name.withLock { $0 = received }
            stop.signal()
        }
    }

    /// Blocks the calling thread until SIGTERM or SIGINT; returns its name.
    @discardableResult
    public func wait() -> String {
        stop.wait()
        return name.withLock { $0 }
    }
}
