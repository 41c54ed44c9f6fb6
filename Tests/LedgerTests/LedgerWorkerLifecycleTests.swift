import ServiceRuntime
import Testing

@testable import Ledger

/// The ledger worker's lifecycle, every (phase, event) pair: the phase it leads to and the actions it asks for
/// (none and the same phase: no effect), and what each phase answers (may it apply, is it stopping, its health).
/// No database, no Kafka.
@Suite("ledger worker lifecycle")
struct LedgerWorkerLifecycleTests {
    typealias Phase = LedgerWorkerLifecycle.Phase
    typealias Event = LedgerWorkerLifecycle.Event
    typealias Action = LedgerWorkerLifecycle.Action

    static let phases: [Phase] = [
        .created, .preparingSchema, .checkingBinding, .applying, .refused("bound elsewhere"),
        .stopping(refusal: nil), .stopping(refusal: "bound elsewhere"), .stopped(refusal: nil),
        .stopped(refusal: "bound elsewhere"),
    ]
    static let events: [Event] = [.start, .schemaReady, .bindingChecked, .refuse("stale"), .stop, .loopEnded]

    /// The transitions that have an effect; every other pair of `phases` × `events` has none (same phase, no actions).
    static let transitions: [(Phase, Event, Phase, [Action])] = [
        (.created, .start, .preparingSchema, [.startLoop]),
        (.created, .refuse("stale"), .refused("stale"), [.reportRefusal("stale")]),
        // Never started: nothing to wake or wait for.
        (.created, .stop, .stopped(refusal: nil), []),
        (.preparingSchema, .schemaReady, .checkingBinding, []),
        (.preparingSchema, .refuse("stale"), .refused("stale"), [.reportRefusal("stale")]),
        (.preparingSchema, .stop, .stopping(refusal: nil), [.wakeLoop, .waitForLoop]),
        (.checkingBinding, .bindingChecked, .applying, []),
        (.checkingBinding, .refuse("stale"), .refused("stale"), [.reportRefusal("stale")]),
        (.checkingBinding, .stop, .stopping(refusal: nil), [.wakeLoop, .waitForLoop]),
        (.applying, .refuse("stale"), .refused("stale"), [.reportRefusal("stale")]),
        (.applying, .stop, .stopping(refusal: nil), [.wakeLoop, .waitForLoop]),
        // A refusal is kept: a second reason does not replace the first, stopping keeps it.
        (.refused("bound elsewhere"), .stop, .stopping(refusal: "bound elsewhere"), [.wakeLoop, .waitForLoop]),
        (.stopping(refusal: nil), .refuse("stale"), .stopping(refusal: "stale"), [.reportRefusal("stale")]),
        // Every stop is answered: a second one waits for the same loop.
        (.stopping(refusal: nil), .stop, .stopping(refusal: nil), [.waitForLoop]),
        (.stopping(refusal: "bound elsewhere"), .stop, .stopping(refusal: "bound elsewhere"), [.waitForLoop]),
        (.stopping(refusal: nil), .loopEnded, .stopped(refusal: nil), [.announceLoopEnded]),
        (.stopping(refusal: "bound elsewhere"), .loopEnded, .stopped(refusal: "bound elsewhere"), [.announceLoopEnded]),
    ]

    @Test("every (phase, event) pair leads where the table says and asks for its actions, or does nothing")
    func everyTransition() {
        for phase in Self.phases {
            for event in Self.events {
                let row = Self.transitions.first { $0.0 == phase && $0.1 == event }
                var lifecycle = LedgerWorkerLifecycle(phase: phase)
                let actions = lifecycle.handle(event)
                #expect(actions == (row?.3 ?? []), "\(phase) on \(event)")
                #expect(lifecycle.phase == (row?.2 ?? phase), "\(phase) on \(event)")
            }
        }
    }

    @Test("only applying applies; refusals are not alive; the other phases are alive and not ready")
    func answers() {
        let rows: [(Phase, mayApply: Bool, isStopping: Bool, Health?)] = [
            (.created, false, false, Health(readiness: "preparing the database schema")),
            (.preparingSchema, false, false, Health(readiness: "preparing the database schema")),
            (.checkingBinding, false, false, Health(readiness: "checking the database's Kafka cluster binding")),
            (.applying, true, false, nil),
            (.refused("bound elsewhere"), false, false, .unhealthy("bound elsewhere")),
            (.stopping(refusal: nil), false, true, Health(readiness: "draining")),
            (.stopping(refusal: "bound elsewhere"), false, true, .unhealthy("bound elsewhere")),
            (.stopped(refusal: nil), false, true, Health(readiness: "draining")),
            (.stopped(refusal: "bound elsewhere"), false, true, .unhealthy("bound elsewhere")),
        ]
        #expect(rows.count == Self.phases.count)
        for (phase, mayApply, isStopping, health) in rows {
            let lifecycle = LedgerWorkerLifecycle(phase: phase)
            #expect(lifecycle.mayApply == mayApply, "\(phase)")
            #expect(lifecycle.isStopping == isStopping, "\(phase)")
            #expect(lifecycle.health == health, "\(phase)")
        }
    }

    @Test("the ordinary life: start, schema, binding, apply, stop, loop ended")
    func ordinaryLife() {
        var lifecycle = LedgerWorkerLifecycle()
        #expect(lifecycle.handle(.start) == [.startLoop])
        for event: Event in [.schemaReady, .bindingChecked] { #expect(lifecycle.handle(event) == []) }
        #expect(lifecycle.mayApply)
        #expect(lifecycle.handle(.stop) == [.wakeLoop, .waitForLoop])
        #expect(!lifecycle.mayApply && lifecycle.isStopping)
        #expect(lifecycle.handle(.loopEnded) == [.announceLoopEnded])
        #expect(lifecycle.phase == .stopped(refusal: nil))
        // Nothing starts it again.
        #expect(lifecycle.handle(.start) == [])
        #expect(lifecycle.phase == .stopped(refusal: nil))
    }
}
