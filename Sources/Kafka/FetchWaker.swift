import Dispatch
import ServiceSupport

/// Wakes librdkafka's fetchers after partitions are resumed (`RDKafkaClient.wakeFetchers`), off the caller's
/// thread: the wake is a blocking request to the partitions' leaders. One wake runs at a time, and partitions
/// resumed while it runs are woken together by the next, so a consumer that resumes often sends at most one request
/// per leader per round trip.
final class FetchWaker: Sendable {
    private struct State {
        var pending: Set<TopicPartition> = []
        var running = false
    }

    private let queue = DispatchQueue(label: "kafka-fetch-waker")
    private let state = Locked(State())
    private let wake: @Sendable ([TopicPartition]) -> Void

    /// - Parameter wake: wakes the fetchers of the given partitions (sorted), blocking until done.
    init(wake: @escaping @Sendable ([TopicPartition]) -> Void) {
        self.wake = wake
    }

    /// Wakes the fetchers of `partitions` soon: now when no wake runs, else right after the one running.
    func request(_ partitions: [TopicPartition]) {
        guard !partitions.isEmpty else { return }
        let start = state.withLock { state -> Bool in
            state.pending.formUnion(partitions)
            defer { state.running = true }
            return !state.running
        }
        if start { queue.async { self.drain() } }
    }

    private func drain() {
        while let next = takePending() {
            wake(next)
        }
    }

    /// The partitions waiting for a wake, or nil (and no wake running any more) when none wait.
    private func takePending() -> [TopicPartition]? {
        state.withLock { state in
            guard !state.pending.isEmpty else {
                state.running = false
                return nil
            }
            defer { state.pending.removeAll() }
            return state.pending.sorted()
        }
    }
}
