import ServiceRuntime

/// The ledger worker's lifecycle as a value: (phase, event) → (phase, actions). The worker holds it under one lock,
/// feeds it events from its thread and the service's, and applies the returned actions in order *outside* the lock;
/// everything that asks "may it apply?", "is it stopping?", "why is it not healthy?" reads the phase instead of
/// separate flags (`LedgerWorkerLifecycleTests` checks every transition, no database or Kafka).
///
/// Invariants:
/// - Nothing is applied before the schema is prepared and the database's Kafka cluster binding is checked
///   (`mayApply` only in `applying`).
/// - A refusal is for good in this process: no event leads from `refused` back to `applying`, and the first reason
///   is kept (through stopping too, so health keeps saying why).
/// - `stop` is final: from any phase it leads to `stopping` (or `stopped` when the loop never started), and only
///   `loopEnded` leaves `stopping`.
struct LedgerWorkerLifecycle: Sendable, Equatable {
    enum Phase: Sendable, Equatable {
        /// Created; the worker's thread has not started.
        case created
        /// Migrating the schema (retried with backoff until it succeeds).
        case preparingSchema
        /// Checking (or making) the database's binding to this Kafka cluster.
        case checkingBinding
        /// Taking batches from the buffer and applying them.
        case applying
        /// Applying nothing, for good in this process: the operator must decide (a database bound to another
        /// cluster, or partitions stored beyond their end).
        case refused(String)
        /// Stop was asked; the batch in progress may still commit. Keeps the refusal, if there was one.
        case stopping(refusal: String?)
        /// The worker's loop ended.
        case stopped(refusal: String?)
    }

    enum Event: Sendable, Equatable {
        case start
        case schemaReady
        case bindingChecked
        case refuse(String)
        case stop
        case loopEnded
    }

    /// What the worker does after a transition, outside the lock, in this order.
    enum Action: Sendable, Equatable {
        /// Start the worker's thread (it prepares the schema, checks the binding, then applies).
        case startLoop
        /// Say once, loudly, why nothing is applied any more.
        case reportRefusal(String)
        /// Wake the loop where it waits (for a batch, a retry) so that it sees `stopping`.
        case wakeLoop
        /// Wait (bounded by the caller) for the loop to end: the batch in progress commits or is abandoned.
        case waitForLoop
        /// The loop ended: release whoever waits for it.
        case announceLoopEnded
    }

    private(set) var phase: Phase = .created

    init(phase: Phase = .created) {
        self.phase = phase
    }

    /// Applies `event` and returns what the worker must do; no actions and no change when the event has no effect
    /// in this phase (a second `stop` while stopping still waits for the loop).
    mutating func handle(_ event: Event) -> [Action] {
        let (next, actions) = Self.transition(from: phase, on: event)
        phase = next
        return actions
    }

    /// The phase after `event` in `phase`, and the actions it asks for.
    static func transition(from phase: Phase, on event: Event) -> (Phase, [Action]) {
        switch (phase, event) {
        case (.created, .start): (.preparingSchema, [.startLoop])
        case (.preparingSchema, .schemaReady): (.checkingBinding, [])
        case (.checkingBinding, .bindingChecked): (.applying, [])
        case (.created, .refuse(let reason)), (.preparingSchema, .refuse(let reason)),
            (.checkingBinding, .refuse(let reason)), (.applying, .refuse(let reason)):
            (.refused(reason), [.reportRefusal(reason)])
        case (.stopping(nil), .refuse(let reason)): (.stopping(refusal: reason), [.reportRefusal(reason)])
        // Never started: no loop to wake or wait for.
        case (.created, .stop): (.stopped(refusal: nil), [])
        case (.preparingSchema, .stop), (.checkingBinding, .stop), (.applying, .stop):
            (.stopping(refusal: nil), [.wakeLoop, .waitForLoop])
        case (.refused(let reason), .stop): (.stopping(refusal: reason), [.wakeLoop, .waitForLoop])
        // Every stop is answered: a later one waits for the same loop.
        case (.stopping, .stop): (phase, [.waitForLoop])
        case (.stopping(let refusal), .loopEnded): (.stopped(refusal: refusal), [.announceLoopEnded])
        default: (phase, [])
        }
    }

    /// Batches may be applied.
    var mayApply: Bool { phase == .applying }

    /// Stop was asked (the loop ends after the batch in progress).
    var isStopping: Bool {
        switch phase {
        case .stopping, .stopped: true
        default: false
        }
    }

    /// Why the ledger refuses to apply anything, if it does.
    var refusal: String? {
        switch phase {
        case .refused(let reason): reason
        case .stopping(let refusal), .stopped(let refusal): refusal
        default: nil
        }
    }

    /// The worker's part of the service's health: nil in `applying` (the owner then checks the database and the
    /// consumer); a refusal is not alive (the operator must decide); the other phases are alive but not ready.
    var health: Health? {
        switch phase {
        case .refused(let reason), .stopping(refusal: let reason?), .stopped(refusal: let reason?):
            .unhealthy(reason)
        case .created, .preparingSchema: Health(readiness: "preparing the database schema")
        case .checkingBinding: Health(readiness: "checking the database's Kafka cluster binding")
        case .applying: nil
        case .stopping(refusal: nil), .stopped(refusal: nil): Health(readiness: "draining")
        }
    }
}
