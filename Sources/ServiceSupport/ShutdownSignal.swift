import Dispatch
import Foundation

/// Turns SIGTERM and SIGINT into a callback on a private queue, so a service can drain before it exits.
///
/// The default disposition of the signals is replaced for the life of the process; keep the returned value alive.
public final class ShutdownSignal: @unchecked Sendable {
    // Set once in init and only cancelled in deinit.
    private let sources: [any DispatchSourceSignal]

    /// Calls `handler` with the signal's name on the first SIGTERM or SIGINT; a second signal exits at once (status 1),
    /// for operators who really mean it.
    ///
    /// The handler runs on a queue of its own, so it may block for as long as draining takes: the signal queue stays
    /// free to see the second signal.
    public init(handler: @escaping @Sendable (String) -> Void) {
        let queue = DispatchQueue(label: "shutdown-signal")
        let handlerQueue = DispatchQueue(label: "shutdown-handler")
        let fired = SignalLatch()
        var sources: [any DispatchSourceSignal] = []
        for (number, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                if fired.fire() {
                    handlerQueue.async { handler(name) }
                } else {
                    exit(1)
                }
            }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }

    deinit {
        for source in sources { source.cancel() }
    }
}

private final class SignalLatch: @unchecked Sendable {
    // Only touched on the signal queue, which is serial.
    private var hasFired = false

    /// True the first time.
    func fire() -> Bool {
        defer { hasFired = true }
        return !hasFired
    }
}
