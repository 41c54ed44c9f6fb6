import Synchronization

/// What publish failures say about the process's health, for `/healthz` and `/readyz`.
///
/// - A fatal producer error makes the process unhealthy for good: only a restart recreates the producer (the
///   message is then redelivered, since its offset was never stored).
/// - Failures that cannot succeed without an operator (topic authorization, unknown topic, invalid record) make the
///   process not ready once `notReadyAfter` of them happened in a row, and ready again at the next acknowledgement.
///   Transient failures (timeouts, brokers down, a full queue) are not counted: they fix themselves.
final class PublishHealth: Sendable {
    private struct State {
        var fatal: String?
        var consecutivePermanent = 0
        var lastPermanent: (topic: String, code: Int32?)?
    }

    let notReadyAfter: Int
    private let state = Mutex(State())

    init(notReadyAfter: Int) {
        self.notReadyAfter = max(notReadyAfter, 1)
    }

    func acknowledged() {
        state.withLock { state in
            state.consecutivePermanent = 0
            state.lastPermanent = nil
        }
    }

    /// Records a failure that can never succeed by retrying; returns the number of such failures in a row.
    @discardableResult
    func permanentFailure(topic: String, code: Int32?) -> Int {
        state.withLock { state in
            state.consecutivePermanent += 1
            state.lastPermanent = (topic, code)
            return state.consecutivePermanent
        }
    }

    /// Returns true the first time.
    @discardableResult
    func fatalFailure(_ message: String) -> Bool {
        state.withLock { state in
            guard state.fatal == nil else { return false }
            state.fatal = message
            return true
        }
    }

    /// nil while alive, else why not.
    var livenessProblem: String? {
        state.withLock { $0.fatal.map { "fatal Kafka producer error: \($0)" } }
    }

    /// nil while publishing works (or fails only transiently), else why the process is not ready.
    var readinessProblem: String? {
        state.withLock { state in
            if let fatal = state.fatal { return "fatal Kafka producer error: \(fatal)" }
            guard state.consecutivePermanent >= notReadyAfter, let last = state.lastPermanent else {
                return nil
            }
            return
                "\(state.consecutivePermanent) publishes in a row failed without hope of a retry succeeding "
                + "(last: topic \(last.topic), code \(last.code.map(String.init) ?? "none"))"
        }
    }
}
