import Foundation
import ServiceSupport

/// What a client's owner does at the steps of `ClientLifecycle` (each called by `ClientRuntime`, outside its lock).
protocol PolledClientOwner: AnyObject, Sendable {
    /// Before the poll thread starts (a consumer subscribes).
    func willStartPolling(_ client: RDKafkaClient)
    /// One round of the poll loop, on the poll thread: should block at most ~100 ms.
    func pollOnce(_ client: RDKafkaClient)
    /// Producer: deliver or fail what is outstanding within `timeout` (the poll thread still runs).
    func drain(_ client: RDKafkaClient, timeout: Duration)
    /// On the poll thread after its loop: leave the group, purge, destroy.
    func closeClient(_ client: RDKafkaClient)
    /// How long a close waits for the poll thread, given the caller's close timeout.
    func pollThreadWait(closeTimeout: Duration) -> Duration
    /// The wait for the poll thread timed out (the close finishes in the background).
    func closeDidTimeOut()
}

extension PolledClientOwner {
    func willStartPolling(_ client: RDKafkaClient) {}
    func drain(_ client: RDKafkaClient, timeout: Duration) {}
    func pollThreadWait(closeTimeout: Duration) -> Duration { closeTimeout }
}

/// A client's lifecycle state under its lock, its poll thread, and the one place where the lifecycle's actions are
/// applied. Holds no reference to its owner: the owner is passed with each event, and the poll thread's closures
/// keep it alive until the client is closed (so dropping an owner never skips its close).
final class ClientRuntime: Sendable {
    private let lifecycle: Locked<ClientLifecycle<RDKafkaClient>>
    private let pollThread: PollThread

    init(client: RDKafkaClient, threadName: String, drainsBeforeStopping: Bool = false) {
        self.lifecycle = Locked(ClientLifecycle(client: client, drainsBeforeStopping: drainsBeforeStopping))
        self.pollThread = PollThread(name: threadName)
    }

    /// The client while it may be used (until it was closed).
    var client: RDKafkaClient? { lifecycle.withLock { $0.client } }

    /// The client for new work: nil once close was asked.
    var clientForNewWork: RDKafkaClient? { lifecycle.withLock { $0.acceptsNewWork } }

    var isStopRequested: Bool { pollThread.isStopRequested }

    /// Starts polling (only the first call, and not after close).
    func start(_ owner: some PolledClientOwner) {
        apply(lifecycle.withLock { $0.handle(.start) }, owner: owner, closeTimeout: .zero)
    }

    /// Closes the client, waiting up to what the owner says for `timeout`; from the poll thread it returns at once.
    func close(_ owner: some PolledClientOwner, timeout: Duration) {
        let onPollThread = pollThread.isCurrentThread
        apply(lifecycle.withLock { $0.handle(.close(onPollThread: onPollThread)) }, owner: owner, closeTimeout: timeout)
    }

    private func apply<Owner: PolledClientOwner>(
        _ actions: [ClientLifecycle<RDKafkaClient>.Action], owner: Owner, closeTimeout: Duration
    ) {
        for (index, action) in actions.enumerated() {
            switch action {
            case .startPolling(let client):
                owner.willStartPolling(client)
                pollThread.start(
                    poll: { owner.pollOnce(client) }, finish: { [self] in loopFinished(owner) })
            case .runClosePathAlone:
                pollThread.start(poll: {}, finish: { [self] in loopFinished(owner) })
            case .drain(let client):
                owner.drain(client, timeout: closeTimeout)
            case .stopPolling:
                pollThread.requestStop()
            case .waitForPollThread:
                if !pollThread.wait(timeout: owner.pollThreadWait(closeTimeout: closeTimeout)) { owner.closeDidTimeOut() }
            case .closeClient(let client):
                owner.closeClient(client)
                apply(lifecycle.withLock { $0.handle(.clientClosed) }, owner: owner, closeTimeout: closeTimeout)
            case .moveOffPollThread:
                let rest = Array(actions[(index + 1)...])
                Thread.detachNewThread { [self] in apply(rest, owner: owner, closeTimeout: closeTimeout) }
                return
            }
        }
    }

    private func loopFinished(_ owner: some PolledClientOwner) {
        apply(lifecycle.withLock { $0.handle(.pollLoopFinished) }, owner: owner, closeTimeout: .zero)
    }
}
