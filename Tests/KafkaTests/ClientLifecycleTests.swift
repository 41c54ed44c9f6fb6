import Testing

@testable import Kafka

/// `ClientLifecycle` as a table: every (client kind, state, event) and the state and actions it leads to, without
/// Kafka or threads. A row reads: in this state, this event moves to that state and asks the owner to do these
/// things, in this order, outside the lock.
@Suite("Client lifecycle (consumer, follower, producer)")
struct ClientLifecycleTests {
    typealias Lifecycle = ClientLifecycle<String>
    typealias State = Lifecycle.State
    typealias Event = Lifecycle.Event

    enum Kind: CaseIterable, CustomStringConvertible {
        /// Consumer and topic follower: stop the poll thread, which closes the client.
        case polling
        /// Producer: drain first (its delivery reports need the poll thread), then stop.
        case producer

        var drains: Bool { self == .producer }
        var description: String { self == .producer ? "producer" : "consumer/follower" }
    }

    struct Row: CustomStringConvertible {
        let kind: Kind
        let state: State
        let event: Event
        let next: State
        let actions: [Lifecycle.Action]

        var description: String { "\(kind): \(state) + \(event)" }
    }

    static let c = "client"

    static let rows: [Row] = [
        // Start: only from idle, once.
        Row(kind: .polling, state: .idle(c), event: .start, next: .running(c), actions: [.startPolling(c)]),
        Row(kind: .producer, state: .idle(c), event: .start, next: .running(c), actions: [.startPolling(c)]),
        Row(kind: .polling, state: .running(c), event: .start, next: .running(c), actions: []),
        Row(kind: .producer, state: .running(c), event: .start, next: .running(c), actions: []),
        Row(kind: .polling, state: .closing(c), event: .start, next: .closing(c), actions: []),
        Row(kind: .producer, state: .closing(c), event: .start, next: .closing(c), actions: []),
        Row(kind: .polling, state: .closed, event: .start, next: .closed, actions: []),
        Row(kind: .producer, state: .closed, event: .start, next: .closed, actions: []),

        // Close before start: a thread of its own runs the close path, bounded like any close.
        Row(
            kind: .polling, state: .idle(c), event: .close(onPollThread: false), next: .closing(c),
            actions: [.runClosePathAlone(c), .stopPolling, .waitForPollThread]),
        Row(
            kind: .producer, state: .idle(c), event: .close(onPollThread: false), next: .closing(c),
            actions: [.runClosePathAlone(c), .stopPolling, .waitForPollThread]),
        Row(
            kind: .polling, state: .idle(c), event: .close(onPollThread: true), next: .closing(c),
            actions: [.runClosePathAlone(c), .stopPolling, .waitForPollThread]),
        Row(
            kind: .producer, state: .idle(c), event: .close(onPollThread: true), next: .closing(c),
            actions: [.runClosePathAlone(c), .stopPolling, .waitForPollThread]),

        // Close while running: stop and wait; a producer drains first.
        Row(
            kind: .polling, state: .running(c), event: .close(onPollThread: false), next: .closing(c),
            actions: [.stopPolling, .waitForPollThread]),
        Row(
            kind: .producer, state: .running(c), event: .close(onPollThread: false), next: .closing(c),
            actions: [.drain(c), .stopPolling, .waitForPollThread]),
        // From a callback on the poll thread: never wait for itself; a producer's drain moves to another thread.
        Row(
            kind: .polling, state: .running(c), event: .close(onPollThread: true), next: .closing(c),
            actions: [.stopPolling]),
        Row(
            kind: .producer, state: .running(c), event: .close(onPollThread: true), next: .closing(c),
            actions: [.moveOffPollThread, .drain(c), .stopPolling, .waitForPollThread]),

        // Close again while closing: a consumer waits for the first close; a producer returns at once.
        Row(
            kind: .polling, state: .closing(c), event: .close(onPollThread: false), next: .closing(c),
            actions: [.waitForPollThread]),
        Row(kind: .producer, state: .closing(c), event: .close(onPollThread: false), next: .closing(c), actions: []),
        Row(kind: .polling, state: .closing(c), event: .close(onPollThread: true), next: .closing(c), actions: []),
        Row(kind: .producer, state: .closing(c), event: .close(onPollThread: true), next: .closing(c), actions: []),
        Row(kind: .polling, state: .closed, event: .close(onPollThread: false), next: .closed, actions: []),
        Row(kind: .producer, state: .closed, event: .close(onPollThread: false), next: .closed, actions: []),
        Row(kind: .polling, state: .closed, event: .close(onPollThread: true), next: .closed, actions: []),
        Row(kind: .producer, state: .closed, event: .close(onPollThread: true), next: .closed, actions: []),

        // The loop ended: the poll thread closes the client; the client stays usable until that finished (a
        // consumer's final revoke stores offsets).
        Row(
            kind: .polling, state: .closing(c), event: .pollLoopFinished, next: .closing(c),
            actions: [.closeClient(c)]),
        Row(
            kind: .producer, state: .closing(c), event: .pollLoopFinished, next: .closing(c),
            actions: [.closeClient(c)]),
        // It ends only after a stop, which only closing asks for: anywhere else it changes nothing.
        Row(kind: .polling, state: .idle(c), event: .pollLoopFinished, next: .idle(c), actions: []),
        Row(kind: .producer, state: .idle(c), event: .pollLoopFinished, next: .idle(c), actions: []),
        Row(kind: .polling, state: .running(c), event: .pollLoopFinished, next: .running(c), actions: []),
        Row(kind: .producer, state: .running(c), event: .pollLoopFinished, next: .running(c), actions: []),
        Row(kind: .polling, state: .closed, event: .pollLoopFinished, next: .closed, actions: []),
        Row(kind: .producer, state: .closed, event: .pollLoopFinished, next: .closed, actions: []),

        // The client was destroyed: nothing holds it any more.
        Row(kind: .polling, state: .closing(c), event: .clientClosed, next: .closed, actions: []),
        Row(kind: .producer, state: .closing(c), event: .clientClosed, next: .closed, actions: []),
        Row(kind: .polling, state: .idle(c), event: .clientClosed, next: .idle(c), actions: []),
        Row(kind: .producer, state: .idle(c), event: .clientClosed, next: .idle(c), actions: []),
        Row(kind: .polling, state: .running(c), event: .clientClosed, next: .running(c), actions: []),
        Row(kind: .producer, state: .running(c), event: .clientClosed, next: .running(c), actions: []),
        Row(kind: .polling, state: .closed, event: .clientClosed, next: .closed, actions: []),
        Row(kind: .producer, state: .closed, event: .clientClosed, next: .closed, actions: []),
    ]

    static let allStates: [State] = [.idle(c), .running(c), .closing(c), .closed]
    static let allEvents: [Event] = [
        .start, .close(onPollThread: false), .close(onPollThread: true), .pollLoopFinished, .clientClosed,
    ]

    @Test("every (kind, state, event) leads to the state and actions of its row", arguments: rows)
    func transition(_ row: Row) {
        var lifecycle = Lifecycle(state: row.state, drainsBeforeStopping: row.kind.drains)
        let actions = lifecycle.handle(row.event)
        #expect(lifecycle.state == row.next)
        #expect(actions == row.actions)
    }

    @Test("the table has exactly one row for every kind, state and event")
    func tableIsComplete() {
        for kind in Kind.allCases {
            for state in Self.allStates {
                for event in Self.allEvents {
                    let matching = Self.rows.filter { $0.kind == kind && $0.state == state && $0.event == event }
                    #expect(matching.count == 1, "\(kind): \(state) + \(event)")
                }
            }
        }
        #expect(Self.rows.count == Kind.allCases.count * Self.allStates.count * Self.allEvents.count)
    }

    @Test("the client is handed out until it was closed, and to new work only until close was asked")
    func clientAccess() {
        for (state, usable, forNewWork) in [
            (State.idle(Self.c), true, true), (.running(Self.c), true, true), (.closing(Self.c), true, false),
            (.closed, false, false),
        ] {
            let lifecycle = Lifecycle(state: state, drainsBeforeStopping: false)
            #expect((lifecycle.client != nil) == usable, "\(state)")
            #expect((lifecycle.acceptsNewWork != nil) == forNewWork, "\(state)")
        }
    }

    @Test("a whole life, start to closed, asks for each step once", arguments: Kind.allCases)
    func wholeLife(_ kind: Kind) {
        var lifecycle = Lifecycle(client: Self.c, drainsBeforeStopping: kind.drains)
        var steps: [Lifecycle.Action] = []
        for event in [Event.start, .close(onPollThread: false), .close(onPollThread: false), .pollLoopFinished,
            .clientClosed, .close(onPollThread: false)]
        {
            steps += lifecycle.handle(event)
        }
        #expect(lifecycle.state == .closed)
        let expected: [Lifecycle.Action] =
            kind.drains
            ? [.startPolling(Self.c), .drain(Self.c), .stopPolling, .waitForPollThread, .closeClient(Self.c)]
            : [.startPolling(Self.c), .stopPolling, .waitForPollThread, .waitForPollThread, .closeClient(Self.c)]
        #expect(steps == expected)
    }
}
