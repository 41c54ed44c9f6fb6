import ServiceRuntime
import Testing

@testable import Ledger

/// The ledger worker's lifecycle, every (phase, event) pair: the phase it leads to (nil: no effect), and what the
/// phase answers (may it apply, is it stopping, its health). No database, no Kafka.
@Suite("ledger worker lifecycle")
struct LedgerWorkerLifecycleTests {
    typealias Phase = LedgerWorkerLifecycle.Phase
    typealias Event = LedgerWorkerLifecycle.Event

    static let phases: [Phase] = [
        .created, .preparingSchema, .checkingBinding, .applying, .refused("bound elsewhere"),
        .stopping(refusal: nil), .stopping(refusal: "bound elsewhere"), .stopped(refusal: nil),
        .stopped(refusal: "bound elsewhere"),
    ]
    static let events: [Event] = [.start, .schemaReady, .bindingChecked, .refuse("stale"), .stop, .loopEnded]

    /// The transitions that have an effect; every other pair of `phases` × `events` has none.
    static let transitions: [(Phase, Event, Phase)] = [
        (.created, .start, .preparingSchema),
        (.created, .refuse("stale"), .refused("stale")),
        (.created, .stop, .stopped(refusal: nil)),
        (.preparingSchema, .schemaReady, .checkingBinding),
        (.preparingSchema, .refuse("stale"), .refused("stale")),
        (.preparingSchema, .stop, .stopping(refusal: nil)),
        (.checkingBinding, .bindingChecked, .applying),
        (.checkingBinding, .refuse("stale"), .refused("stale")),
        (.checkingBinding, .stop, .stopping(refusal: nil)),
        (.applying, .refuse("stale"), .refused("stale")),
        (.applying, .stop, .stopping(refusal: nil)),
        // A refusal is kept: a second reason does not replace the first, stopping keeps it.
        (.refused("bound elsewhere"), .stop, .stopping(refusal: "bound elsewhere")),
        (.stopping(refusal: nil), .refuse("stale"), .stopping(refusal: "stale")),
        (.stopping(refusal: nil), .loopEnded, .stopped(refusal: nil)),
        (.stopping(refusal: "bound elsewhere"), .loopEnded, .stopped(refusal: "bound elsewhere")),
    ]

    @Test("every (phase, event) pair leads where the table says, or nowhere")
    func everyTransition() {
        for phase in Self.phases {
            for event in Self.events {
                let expected = Self.transitions.first { $0.0 == phase && $0.1 == event }?.2
                var lifecycle = LedgerWorkerLifecycle(phase: phase)
                let changed = lifecycle.handle(event)
                #expect(changed == (expected != nil), "\(phase) on \(event)")
                #expect(lifecycle.phase == (expected ?? phase), "\(phase) on \(event)")
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
        for event: Event in [.start, .schemaReady, .bindingChecked] { lifecycle.handle(event) }
        #expect(lifecycle.mayApply)
        lifecycle.handle(.stop)
        #expect(!lifecycle.mayApply && lifecycle.isStopping)
        lifecycle.handle(.loopEnded)
        #expect(lifecycle.phase == .stopped(refusal: nil))
        // Nothing starts it again.
        let restarted = lifecycle.handle(.start)
        #expect(!restarted)
    }
}
