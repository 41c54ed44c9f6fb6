import AppStoreServerAPI
import Dispatch
import Foundation
import LedgerRules
import Postgres
import ReceiptModel
import ServiceSupport
import Synchronization

/// The refund responder: answers each recorded `CONSUMPTION_REQUEST` once, from the ledger's state of the purchase
/// at the time of the answer (`ConsumptionRules.plan`), retrying Apple's busy answers with backoff until the
/// 12-hour deadline. Runs on a thread of its own in the ledger process; several ledger instances share the work
/// (a request is claimed with `FOR UPDATE SKIP LOCKED` and a lease).
///
/// An answer is recorded once (`status` leaves `pending` once). A crash between Apple's acceptance and the write
/// leaves the request to be taken again when its lease ends, and the same facts are sent again: Send Consumption
/// Information replaces what it was told before, so Apple still holds one answer.
final class ConsumptionResponder: Sendable {
    struct Configuration: Sendable {
        var mode: ConsumptionRules.Mode
        var policy: ConsumptionRules.Policy
        /// The first retry's delay; doubled per failed attempt (`LEDGER_CONSUMPTION_RETRY_BASE_MS`).
        var retryBaseMs: Int64 = 5_000
        /// How often due requests are looked for when nothing wakes the responder.
        var pollInterval: Duration = .seconds(1)
        /// How long one claimed request is kept from other instances (longer than one call may take).
        var leaseMs: Int64 = 120_000
        /// The longest one call to Apple may take.
        var callTimeoutMs: Int64 = 30_000
    }

    private let configuration: Configuration
    private let sender: (any ConsumptionSending)?
    private let database: DatabaseLink
    private let metrics: ConsumptionMetrics
    private let logger: Logger
    private let nowMs: @Sendable () -> Int64
    private let wakeUp = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    private let stopped = DispatchSemaphore(value: 0)

    /// - Parameter sender: required when the mode is `send`.
    init(
        configuration: Configuration, sender: (any ConsumptionSending)?, database: DatabaseLink,
        metrics: ConsumptionMetrics, logger: Logger,
        nowMs: @escaping @Sendable () -> Int64 = { SystemTime.wallMilliseconds() }
    ) {
        precondition(configuration.mode != .send || sender != nil, "sending consumption information needs a sender")
        self.configuration = configuration
        self.sender = sender
        self.database = database
        self.metrics = metrics
        self.logger = logger
        self.nowMs = nowMs
    }

    func start() {
        Thread.startNamed("consumption-responder") { [self] in
            while !stopping.load(ordering: .acquiring) {
                let worked = runOnce()
                if !worked { _ = wakeUp.wait(timeout: .now() + configuration.pollInterval.timeInterval) }
            }
            database.close()
            stopped.signal()
        }
    }

    /// Looks for due requests now (a batch recorded some).
    func wake() { wakeUp.signal() }

    /// Stops after the request being answered (within `bound`); true when it stopped in time.
    func drain(within bound: Duration) -> Bool {
        stopping.store(true, ordering: .releasing)
        wakeUp.signal()
        return stopped.wait(timeout: .now() + bound.timeInterval) == .success
    }

    /// Answers the requests due now; true when there were some (look again at once).
    @discardableResult
    func runOnce() -> Bool {
        let now = nowMs()
        do throws(PostgresError) {
            let due = try database.withConnection { connection throws(PostgresError) in
                try ConsumptionStore.claimDue(
                    nowMs: now, leaseMs: configuration.leaseMs, limit: 16, on: connection)
            }
            for request in due where !stopping.load(ordering: .relaxed) { try answer(request) }
            let backlog = try database.withConnection { connection throws(PostgresError) in
                try ConsumptionStore.backlog(
                    nowMs: nowMs(), warningMs: ConsumptionMetrics.nearDeadlineMs, on: connection)
            }
            metrics.pending.set(Double(backlog.pending))
            metrics.nearDeadline.set(Double(backlog.nearDeadline))
            return !due.isEmpty
        } catch {
            if !error.isUndefinedTable {  // the schema is not there yet at first start
                logger.error("the refund responder cannot reach the database; retrying", ["error": .string(error.description)])
            }
            return false
        }
    }

    private func answer(_ request: ConsumptionStore.DueRequest) throws(PostgresError) {
        let facts = try database.withConnection { connection throws(PostgresError) in
            try ConsumptionStore.facts(of: request.creditKey, on: connection)
        }
        let now = nowMs()
        let plan = ConsumptionRules.plan(
            mode: configuration.mode, nowMs: now, deadlineMs: request.deadlineMs, state: facts.state,
            consumed: facts.consumed, consented: facts.consented, policy: configuration.policy,
            request: ConsumptionRules.Request(
                productKind: request.productKind, reason: request.reason,
                isSubscriptionPeriod: PurchaseKey.isPeriod(request.creditKey), ownership: request.ownership))
        var outcome = ConsumptionStore.Outcome(
            status: .unanswered, owner: facts.state.owner, attempts: request.attempts)
        switch plan {
        case .unanswered(let reason):
            outcome.unansweredReason = reason.rawValue
        case .dryRun(let answer):
            outcome.status = .dryRun
            outcome.answer = answer
            outcome.body = Self.bodyText(answer)
        case .send(let answer):
            outcome.answer = answer
            outcome.body = Self.bodyText(answer)
            send(request, answer: answer, into: &outcome)
        }
        let recorded = try database.withConnection { connection throws(PostgresError) in
            try ConsumptionStore.record(outcome, eventId: request.eventId, nowMs: nowMs(), on: connection)
        }
        guard recorded else { return }
        count(outcome)
        if outcome.status == .refused {
            // Apple decides this refund without the ledger's facts, and the next one like it is refused too.
            logger.error(
                "Apple refused the answer to a consumption request",
                [
                    "event_id": .string(request.eventId), "attempts": .int(outcome.attempts),
                    "apple_status": .int(outcome.appleStatus ?? 0),
                    "apple_error_code": .int(outcome.appleErrorCode ?? 0),
                    "apple_error": .string(outcome.appleError ?? ""),
                ])
            return
        }
        logger.info(
            "consumption request",
            [
                "event_id": .string(request.eventId), "status": .string(outcome.status.rawValue),
                "reason": .string(outcome.unansweredReason ?? ""), "attempts": .int(outcome.attempts),
                "apple_status": .int(outcome.appleStatus ?? 0),
            ])
    }

    private func send(
        _ request: ConsumptionStore.DueRequest, answer: ConsumptionRules.Answer,
        into outcome: inout ConsumptionStore.Outcome
    ) {
        guard let sender, let environment = AppStoreEnvironment(rawValue: request.environment) else {
            // Neither happens (the mode needs a sender; the table admits Production and Sandbox only): recorded as
            // refused with why, rather than sent anywhere.
            outcome.status = .refused
            outcome.appleError = "no sender, or an environment Apple does not answer in: \(request.environment)"
            return
        }
        let body = Array((outcome.body ?? "").utf8)
        let callDeadlineMs = min(configuration.callTimeoutMs, max(request.deadlineMs - nowMs(), 1))
        let deadline = DispatchTime.now() + .milliseconds(Int(callDeadlineMs))
        let result = Locked<ConsumptionSendResult?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let sent = await sender.send(
                transactionId: request.transactionId, body: body, bundleId: request.bundleId,
                environment: environment, deadline: deadline)
            result.withLock { $0 = sent }
            done.signal()
        }
        done.wait()
        let sent = result.withLock { $0 }
        // Only what reached Apple counts: a call the client held back (after another request's 429) is no attempt.
        outcome.attempts += sent?.requestsSent ?? 0
        switch sent?.outcome {
        case .accepted(let status):
            outcome.status = .answered
            outcome.appleStatus = status
        case .refused(let status, let errorCode, let error):
            outcome.status = .refused
            outcome.appleStatus = status
            outcome.appleErrorCode = errorCode
            outcome.appleError = String(error.prefix(500))
        case .retry(let status, let errorCode, let error, let afterMs):
            outcome.appleStatus = status
            outcome.appleErrorCode = errorCode
            outcome.appleError = String(error.prefix(500))
            let now = nowMs()
            guard
                let next = ConsumptionRules.retryAtMs(
                    attempts: outcome.attempts, nowMs: now, deadlineMs: request.deadlineMs,
                    baseMs: configuration.retryBaseMs)
            else {
                outcome.unansweredReason = ConsumptionRules.UnansweredReason.deadlinePassed.rawValue
                return
            }
            metrics.retries.increment()
            outcome.status = .pending
            outcome.nextAttemptAtMs = min(max(next, now + (afterMs ?? 0)), request.deadlineMs - 1)
        case nil:
            outcome.status = .pending
            outcome.nextAttemptAtMs = nowMs() + configuration.retryBaseMs
        }
    }

    private func count(_ outcome: ConsumptionStore.Outcome) {
        switch outcome.status {
        case .answered: metrics.answered.increment()
        case .dryRun: metrics.dryRuns.increment()
        case .refused:
            metrics.refused.increment()
            metrics.refusedByCode[ConsumptionMetrics.refusalLabel(outcome.appleErrorCode)]?.increment()
        case .unanswered:
            if let reason = outcome.unansweredReason.flatMap(ConsumptionRules.UnansweredReason.init(rawValue:)) {
                metrics.unanswered[reason]?.increment()
            }
        case .pending: break
        }
    }

    /// The body Send Consumption Information takes, as sent and as the audit record keeps it: built by Apple's
    /// field rules for the product's kind (`ConsumptionRules.body`).
    static func bodyText(_ answer: ConsumptionRules.Answer) -> String {
        let body = answer.body
        let request = ConsumptionInformationRequest(
            sampleContentProvided: body.sampleContentProvided, deliveryStatus: body.deliveryStatus.rawValue,
            consumptionPercentage: body.consumptionPercentage, refundPreference: body.refundPreference?.rawValue)
        return (try? request.jsonBody()).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

extension Duration {
    fileprivate var timeInterval: TimeInterval {
        let parts = components
        return TimeInterval(parts.seconds) + TimeInterval(parts.attoseconds) / 1e18
    }
}
