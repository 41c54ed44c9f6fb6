import Kafka
import Synchronization
import ServiceSupport

/// What publish failures say about the process's health, for `/healthz` and `/readyz`.
///
/// - A fatal producer error makes the process unhealthy for good: only a restart recreates the producer (the
///   message is then redelivered, since its offset was never stored).
/// - Failures that cannot succeed without an operator (topic authorization, unknown topic, invalid record) make the
///   process not ready once `notReadyAfter` of them happened in a row on one topic, and ready again at that topic's
///   next acknowledgement (counted per topic, so writes to a healthy topic do not hide a broken one). Transient
///   failures (timeouts, brokers down, a full queue) are not counted: they fix themselves.
final class PublishHealth: Sendable {
    private struct State {
        var fatal: String?
        /// Per topic: permanent failures since its last acknowledgement, and the last code.
        var permanent: [String: (count: Int, code: KafkaErrorCode?)] = [:]
    }

    let notReadyAfter: Int
    private let state = Locked(State())

    init(notReadyAfter: Int) {
        self.notReadyAfter = max(notReadyAfter, 1)
    }

    func acknowledged(topic: String) {
        state.withLock { state in
            if !state.permanent.isEmpty { state.permanent[topic] = nil }
        }
    }

    /// Records a failure on `topic` that retrying cannot fix; returns the number of such failures in a row there.
    @discardableResult
    func permanentFailure(topic: String, code: KafkaErrorCode?) -> Int {
        state.withLock { state in
            let count = (state.permanent[topic]?.count ?? 0) + 1
            state.permanent[topic] = (count, code)
            return count
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
            let broken = state.permanent.filter { $0.value.count >= notReadyAfter }.sorted { $0.key < $1.key }
            guard let (topic, last) = broken.first else { return nil }
            return "\(last.count) publishes in a row to topic \(topic) failed with an error retrying cannot fix "
                + "(code \(last.code.map { String($0.rawValue) } ?? "none"); check the topic and its ACLs)"
        }
    }
}
