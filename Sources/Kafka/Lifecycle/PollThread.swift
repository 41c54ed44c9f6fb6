import Dispatch
import Foundation
import Synchronization
import ServiceSupport

/// A dedicated OS thread running a polling loop (never the Swift cooperative pool: librdkafka's polls block).
///
/// `body` is called repeatedly until `requestStop`; each call should block at most ~100 ms. `finish` runs once on the
/// thread after the loop ends (closing the client there keeps all of its calls on one thread).
final class PollThread: Sendable {
    private let stopRequested = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let name: String
    /// The thread's pthread id once it runs (for `isCurrentThread`).
    private let threadId = Locked<pthread_t?>(nil)

    init(name: String) {
        self.name = name
    }

    var isStopRequested: Bool { stopRequested.load(ordering: .acquiring) }

    /// Starts the thread (only the first call has an effect).
    /// - Returns: false when it was already started.
    @discardableResult
    func start(poll: @escaping @Sendable () -> Void, finish: @escaping @Sendable () -> Void = {}) -> Bool {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return false }
        Thread.startNamed(name) { [self] in
            threadId.withLock { $0 = pthread_self() }
            while !isStopRequested {
                poll()
            }
            finish()
            finished.signal()
        }
        return true
    }

    /// True when called from the poll thread itself (a callback closing its own client must not wait for itself).
    var isCurrentThread: Bool {
        guard let id = threadId.withLock({ $0 }) else { return false }
        return pthread_equal(id, pthread_self()) != 0
    }

    func requestStop() {
        stopRequested.store(true, ordering: .releasing)
    }

    /// Waits for the loop (and `finish`) to end.
    /// - Returns: false when `timeout` passed first (the thread keeps running and finishes on its own).
    func wait(timeout: Duration) -> Bool {
        let deadline = DispatchTime.now() + .milliseconds(Int(timeout.clampedMilliseconds))
        guard finished.wait(timeout: deadline) == .success else { return false }
        finished.signal()  // later waiters return at once
        return true
    }
}
