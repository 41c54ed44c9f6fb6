import Foundation
import ServiceSupport

/// What a client's owner does at the steps of `ClientLifecycle` (each called by `ClientRuntime`, outside its lock).
/// `Resources` is what the lifecycle state holds while the client may be used: the client, and for a consumer also
/// its delegate, so that closing drops both in one transition.
protocol PolledClientOwner: AnyObject, Sendable {
    associatedtype Resources: Sendable

    /// Before the poll thread starts (a consumer subscribes).
    func willStartPolling(_ resources: Resources)
    /// One round of the poll loop, on the poll thread: should block at most ~100 ms.
    func pollOnce(_ resources: Resources)
    /// Producer: deliver or fail what is outstanding within `timeout` (the poll thread still runs).
    func drain(_ resources: Resources, timeout: Duration)
    /// On the poll thread after its loop: leave the group, purge, destroy.
    func closeClient(_ resources: Resources)
    /// How long a close waits for the poll thread, given the caller's close timeout.
    func pollThreadWait(closeTimeout: Duration) -> Duration
    /// The wait for the poll thread timed out (the close finishes in the background).
    func closeDidTimeOut()
}

extension PolledClientOwner {
    func willStartPolling(_ resources: Resources) {}
    func drain(_ resources: Resources, timeout: Duration) {}
    func pollThreadWait(closeTimeout: Duration) -> Duration { closeTimeout }
}

/// A client's lifecycle state under its lock, its poll thread, and the one place where the lifecycle's actions are
/// applied. Holds no reference to its owner: the owner is passed with each event, and the poll thread's closures
/// keep it alive until the client is closed (so dropping an owner never skips its close).
final class ClientRuntime<Resources: Sendable>: Sendable {
    private let lifecycle: Locked<ClientLifecycle<Resources>>
    private let pollThread: PollThread

    init(_ resources: Resources, threadName: String, drainsBeforeStopping: Bool = false) {
        self.lifecycle = Locked(ClientLifecycle(client: resources, drainsBeforeStopping: drainsBeforeStopping))
        self.pollThread = PollThread(name: threadName)
    }

    /// The client (and what else the state holds) while it may be used: until it was closed.
    var resources: Resources? { lifecycle.withLock { $0.client } }

    /// The same for new work: nil once close was asked.
    var resourcesForNewWork: Resources? { lifecycle.withLock { $0.acceptsNewWork } }

    var isStopRequested: Bool { pollThread.isStopRequested }

    /// Starts polling (only the first call, and not after close).
    func start<Owner: PolledClientOwner>(_ owner: Owner) where Owner.Resources == Resources {
        apply(lifecycle.withLock { $0.handle(.start) }, owner: owner, closeTimeout: .zero)
    }

    /// Closes the client, waiting up to what the owner says for `timeout`; from the poll thread it returns at once.
    func close<Owner: PolledClientOwner>(_ owner: Owner, timeout: Duration) where Owner.Resources == Resources {
        let onPollThread = pollThread.isCurrentThread
        apply(lifecycle.withLock { $0.handle(.close(onPollThread: onPollThread)) }, owner: owner, closeTimeout: timeout)
    }

    private func apply<Owner: PolledClientOwner>(
        _ actions: [ClientLifecycle<Resources>.Action], owner: Owner, closeTimeout: Duration
    ) where Owner.Resources == Resources {
        for (index, action) in actions.enumerated() {
            switch action {
            case .startPolling(let resources):
                owner.willStartPolling(resources)
                pollThread.start(poll: { owner.pollOnce(resources) }, finish: { [self] in loopFinished(owner) })
            case .runClosePathAlone:
                pollThread.start(poll: {}, finish: { [self] in loopFinished(owner) })
            case .drain(let resources):
                owner.drain(resources, timeout: closeTimeout)
            case .stopPolling:
                pollThread.requestStop()
            case .waitForPollThread:
                let bound = owner.pollThreadWait(closeTimeout: closeTimeout)
                if !pollThread.wait(timeout: bound) { owner.closeDidTimeOut() }
            case .closeClient(let resources):
                owner.closeClient(resources)
                apply(lifecycle.withLock { $0.handle(.clientClosed) }, owner: owner, closeTimeout: closeTimeout)
            case .moveOffPollThread:
                let rest = Array(actions[(index + 1)...])
                Thread.detachNewThread { [self] in apply(rest, owner: owner, closeTimeout: closeTimeout) }
                return
            }
        }
    }

    private func loopFinished<Owner: PolledClientOwner>(_ owner: Owner) where Owner.Resources == Resources {
        apply(lifecycle.withLock { $0.handle(.pollLoopFinished) }, owner: owner, closeTimeout: .zero)
    }
}
