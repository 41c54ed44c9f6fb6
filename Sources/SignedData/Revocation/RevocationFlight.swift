import Crypto
import Dispatch
import Synchronization

/// One OCSP fetch in progress for one certificate: every check that needs its answer waits on the same flight
/// (single flight), bounded by a timeout. Completed exactly once.
final class RevocationFlight: Sendable {
    private let done = DispatchGroup()
    private let outcome = Mutex<Result<OCSPStatusAnswer, RevocationFetchFailure>?>(nil)

    init() {
        done.enter()
    }

    /// Stores the result and wakes the waiters; later calls are ignored.
    func complete(_ result: Result<OCSPStatusAnswer, RevocationFetchFailure>) {
        let first = outcome.withLock { stored -> Bool in
            guard stored == nil else { return false }
            stored = result
            return true
        }
        if first { done.leave() }
    }

    /// The result, waiting for it at most `timeoutMs`; nil when it did not come in time.
    func wait(timeoutMs: Int) -> Result<OCSPStatusAnswer, RevocationFetchFailure>? {
        _ = done.wait(timeout: .now() + .milliseconds(max(0, timeoutMs)))
        return outcome.withLock { $0 }
    }

    /// The result if the flight is over (never waits).
    var result: Result<OCSPStatusAnswer, RevocationFetchFailure>? { outcome.withLock { $0 } }
}

/// Why a fetch gave no verified answer (transport failure, unusable response), for messages.
struct RevocationFetchFailure: Error, Sendable, Equatable {
    let message: String
}
