/// The one lifecycle of this module's clients (`KafkaConsumer`, `KafkaTopicFollower`, `KafkaProducer`): a pure
/// state machine, (state, event) -> (state, actions). Its owner holds it under a lock, feeds it an event, and applies
/// the returned actions in order *outside* the lock (`ClientLifecycleTests` checks every transition, no Kafka).
///
/// Invariants:
/// - Each client has exactly one poll thread, which alone serves librdkafka's callbacks and alone closes the client:
///   the close path (`closeClient`) runs on it once its loop ended, never on a caller's thread and never inside a
///   callback. A client closed before it was started gets a thread that runs only the close path
///   (`runClosePathAlone`), so closing is bounded the same way.
/// - The state holds the client while it may be used: from `idle` until `closed`. `closing` still hands it out
///   (a consumer's final `willRevoke` stores offsets during the close path) except to new messages of a producer
///   (`acceptsNewWork`), which are refused from the moment close was asked.
/// - `closed` holds nothing: after `clientClosed` nothing can reach the client through the owner.
/// - Every close is answered: the first decides the sequence; later ones only wait for it (or return at once on
///   the poll thread, which must not wait for itself).
/// - A producer drains (delivers or fails what is outstanding) before its poll thread stops, because delivery
///   reports are served by that thread; a drain asked from the poll thread itself (a delivery completion closing its
///   producer) moves to another thread first.
struct ClientLifecycle<Client>: Sendable where Client: Sendable {
    enum State: Sendable {
        /// Created, not started: usable (offsets, lookups), nothing polled yet.
        case idle(Client)
        /// The poll thread is running.
        case running(Client)
        /// Close was asked: the poll thread is stopping (or closing the client); still usable by the close path.
        case closing(Client)
        /// The client was closed and destroyed.
        case closed
    }

    enum Event: Sendable, Equatable {
        case start
        /// `onPollThread`: asked from the client's own poll thread (a callback closing its own client).
        case close(onPollThread: Bool)
        /// The poll loop ended (on the poll thread, or on the close-only thread).
        case pollLoopFinished
        /// The close path finished destroying the client.
        case clientClosed
    }

    enum Action: Sendable {
        /// Start the poll thread (a consumer subscribes first).
        case startPolling(Client)
        /// Never started: start a thread that runs only the close path.
        case runClosePathAlone(Client)
        /// Producer: flush what is outstanding, purge what is not delivered in time (needs the poll thread).
        case drain(Client)
        /// Ask the poll loop to end; it then reports `pollLoopFinished`.
        case stopPolling
        /// Wait (bounded) for the loop and the close path to end.
        case waitForPollThread
        /// On the poll thread after its loop: leave the group / purge, destroy the client, report `clientClosed`.
        case closeClient(Client)
        /// The remaining actions wait for the poll thread: run them on another thread.
        case moveOffPollThread
    }

    /// Whether the client drains before its poll thread stops (producers).
    let drainsBeforeStopping: Bool
    private(set) var state: State

    init(client: Client, drainsBeforeStopping: Bool = false) {
        self.init(state: .idle(client), drainsBeforeStopping: drainsBeforeStopping)
    }

    /// A lifecycle in any state (tests start each row of their table here).
    init(state: State, drainsBeforeStopping: Bool) {
        self.state = state
        self.drainsBeforeStopping = drainsBeforeStopping
    }

    /// The client, while it may be used (`idle`, `running`, `closing`).
    var client: Client? {
        switch state {
        case .idle(let client), .running(let client), .closing(let client): client
        case .closed: nil
        }
    }

    /// The client for new work (a producer's new message): not once close was asked.
    var acceptsNewWork: Client? {
        switch state {
        case .idle(let client), .running(let client): client
        case .closing, .closed: nil
        }
    }

    mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        case (.idle(let client), .start):
            state = .running(client)
            return [.startPolling(client)]
        case (_, .start):
            return []

        case (.idle(let client), .close):
            // Nothing was polled: nothing to drain, and no poll thread this could be running on.
            state = .closing(client)
            return [.runClosePathAlone(client), .stopPolling, .waitForPollThread]
        case (.running(let client), .close(let onPollThread)):
            state = .closing(client)
            let stop: [Action] = [.stopPolling, .waitForPollThread]
            let sequence = drainsBeforeStopping ? [.drain(client)] + stop : stop
            guard onPollThread else { return sequence }
            // A drain needs the poll thread to serve reports, so it must not run on it; a plain stop only must
            // not wait for itself (the close path runs as soon as the callback returns).
            return drainsBeforeStopping ? [.moveOffPollThread] + sequence : [.stopPolling]
        case (.closing, .close(let onPollThread)):
            // The first close decides; a producer's later closes return at once, as before.
            if onPollThread || drainsBeforeStopping { return [] }
            return [.waitForPollThread]
        case (.closed, .close):
            return []

        case (.closing(let client), .pollLoopFinished):
            return [.closeClient(client)]
        case (_, .pollLoopFinished):
            // The loop ends only after stopPolling, which only closing asks for.
            return []

        case (.closing, .clientClosed):
            state = .closed
            return []
        case (_, .clientClosed):
            return []
        }
    }
}

extension ClientLifecycle.Action: Equatable where Client: Equatable {}
extension ClientLifecycle.State: Equatable where Client: Equatable {}
