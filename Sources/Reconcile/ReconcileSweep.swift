import AppStoreServerAPI
import LedgerRules
import Notifications
import Postgres
import ReceiptModel
import ServiceSupport

/// Where corrections go: the notifications and events topics, through an idempotent producer (acks=all).
public protocol CorrectionProducing: Sendable {
    /// Produces one message; returns nil once Kafka acknowledged it, else why not.
    func produce(topic: String, key: [UInt8]?, value: [UInt8], headers: [(name: String, value: String)]) async
        -> String?
}

/// How a sweep ended (the exit status of `receipt-reconcile`).
public enum ReconcileOutcome: Sendable, Equatable {
    /// Everything it found was recorded and produced (or, on a dry run, reported); a spent budget is not a failure:
    /// the purchases left wait for the next sweep.
    case succeeded
    /// Exit 1: the database, Apple or Kafka failed; what was committed stays, the next sweep resumes from it.
    case failed(String)
    /// Exit 3: `--stop-after-pages` stopped it after committing a page and before producing it (a crash drill).
    case stoppedForDrill

    public var exitStatus: Int32 {
        switch self {
        case .succeeded: 0
        case .failed: 1
        case .stoppedForDrill: 3
        }
    }
}

/// One reconciliation sweep of one environment (see docs/CREDITING.md, "Reconciliation"):
/// 1. corrections an earlier sweep recorded but Kafka never acknowledged are produced again (same bytes, same id);
/// 2. Get Notification History for the window since the last sweep: every notification whose event the ledger
///    never applied (its `notificationUUID` is not in `applied_events` or `consumption_requests`) goes onto the
///    notifications topic as Apple's `signedPayload`, as the backfill writes it;
/// 3. Get Refund History for the purchases credited within `RECONCILE_CREDITED_WITHIN_DAYS`, never-checked and
///    longest-unchecked first, within the hourly call budget: `ReconcileRules` compares it with the ledger; a refund
///    the ledger still credits becomes a `debit` event on the events topic (`reconcile:refund:<tid>:<revocation>`).
/// Each page is committed (corrections recorded with their message, purchases marked checked, cursor moved) before
/// its corrections are produced, and each correction is marked produced after Kafka acknowledged it.
public struct ReconcileSweep: Sendable {
    public let options: ReconcileOptions
    public let settings: ReconcileSettings
    public let topics: TopicNames
    public let connection: PostgresConnection
    public let notifications: any NotificationHistoryPaging
    public let refunds: any RefundHistoryPaging
    /// The verifier's notification processing (its checks and event mapping): what the ledger would receive.
    public let processor: NotificationProcessor
    public let refundEvents: RefundDebitEvent
    /// nil on a dry run.
    public let producer: (any CorrectionProducing)?
    public let logger: Logger
    public let output: @Sendable (String) -> Void
    public let nowMs: @Sendable () -> Int64

    public init(
        options: ReconcileOptions, settings: ReconcileSettings, topics: TopicNames, connection: PostgresConnection,
        notifications: any NotificationHistoryPaging, refunds: any RefundHistoryPaging,
        processor: NotificationProcessor, refundEvents: RefundDebitEvent, producer: (any CorrectionProducing)?,
        logger: Logger, output: @escaping @Sendable (String) -> Void,
        nowMs: @escaping @Sendable () -> Int64 = SystemTime.wallMilliseconds
    ) {
        self.options = options
        self.settings = settings
        self.topics = topics
        self.connection = connection
        self.notifications = notifications
        self.refunds = refunds
        self.processor = processor
        self.refundEvents = refundEvents
        self.producer = options.dryRun ? nil : producer
        self.logger = logger
        self.output = output
        self.nowMs = nowMs
    }

    var store: ReconcileStore { ReconcileStore(connection: connection) }
    var environment: String { options.environment.rawValue }

    public func run() async -> ReconcileOutcome {
        let sweepId: Int64
        var state: SweepState
        do {
            guard try store.checkLedgerTables() else {
                return .failed(
                    "the ledger's tables (purchases, applied_events) are not in LEDGER_DATABASE_URL: start "
                        + "receipt-ledger on this database first")
            }
            try ReconcileSchema.migrate(connection)
            guard try store.tryLockSweep() else {
                return .failed("another receipt-reconcile sweep is running on this database; try again after it")
            }
            let startedMs = nowMs()
            let used = try store.callsInLastHour(nowMs: startedMs)
            sweepId = try store.startSweep(environment: environment, dryRun: options.dryRun, nowMs: startedMs)
            state = SweepState(sweepId: sweepId, startedMs: startedMs, budgetLeft: Int64(settings.maxCallsPerHour) - used)
        } catch {
            return .failed("LEDGER_DATABASE_URL: \(error)")
        }
        let outcome: ReconcileOutcome
        do {
            try await sweep(&state)
            outcome = .succeeded
        } catch let stop as SweepStop {
            outcome = stop.outcome
        } catch {
            outcome = .failed("the database failed: \(error)")
        }
        let since = state.startedMs - Int64(settings.creditedWithinDays) * 86_400_000
        if let unchecked = try? store.uncheckedCount(environment: environment, creditedSinceMs: since) {
            state.figures.purchasesUnchecked = unchecked
        }
        let status = outcome == .succeeded ? "succeeded" : "failed"
        var error: String?
        switch outcome {
        case .succeeded: break
        case .failed(let message): error = message
        case .stoppedForDrill: error = "stopped after \(state.pages) pages (--stop-after-pages)"
        }
        do {
            try store.updateSweep(sweepId, figures: state.figures, finished: (status, nowMs(), error))
        } catch {
            logger.error("cannot record the sweep's end", ["error": .string("\(error)")])
        }
        output(state.summaryLine(environment: environment, dryRun: options.dryRun, status: status, error: error))
        return outcome
    }

    private func sweep(_ state: inout SweepState) async throws {
        if producer != nil {
            let pending = try store.unproducedCorrections()
            if !pending.isEmpty {
                logger.info(
                    "producing the corrections an earlier sweep recorded but did not see acknowledged",
                    ["count": .int(pending.count)])
                try await produce(pending, &state)
            }
        }
        try await sweepNotifications(&state)
        try await sweepRefunds(&state)
    }

    // MARK: Get Notification History

    private func sweepNotifications(_ state: inout SweepState) async throws {
        let now = state.startedMs
        let retentionDays: Int64 = options.environment == .sandbox ? 30 : 180
        // A minute inside Apple's retention, so a window computed now is still inside it when Apple reads it.
        let oldest = now - retentionDays * 86_400_000 + 60_000
        var cursor =
            try store.cursor(environment: environment)
            ?? NotificationCursor(
                windowStartMs: now - Int64(settings.creditedWithinDays) * 86_400_000, windowEndMs: nil,
                paginationToken: nil)
        if cursor.windowStartMs < oldest {
            logger.warning(
                "the notification window starts before Apple's retention: notifications older than it cannot be read",
                ["window_start_ms": .int(Int(cursor.windowStartMs)), "retention_days": .int(Int(retentionDays))])
            cursor = NotificationCursor(windowStartMs: oldest, windowEndMs: nil, paginationToken: nil)
        }
        if cursor.windowEndMs == nil {
            let end = now - Int64(settings.notificationLagMinutes) * 60_000
            guard end > cursor.windowStartMs else { return }
            cursor.windowEndMs = end
        }
        guard let windowEnd = cursor.windowEndMs else { return }
        while true {
            guard state.budgetLeft > 0 else {
                state.budgetSpent(logger, "Get Notification History")
                return
            }
            let answer = await notifications.page(
                startMs: cursor.windowStartMs, endMs: windowEnd, onlyFailures: false,
                paginationToken: cursor.paginationToken)
            let page: NotificationHistoryPage
            switch answer {
            case .success(let next): page = next
            case .failure(let error):
                state.count(calls: error.calls)
                if cursor.paginationToken != nil, !options.dryRun {
                    // A stored token may have expired (a sweep that stopped long ago): the next sweep reads the
                    // window from its start; what was already recorded is not recorded or produced again.
                    _ = try store.commitPage(
                        sweepId: state.sweepId, corrections: [], checked: [], environment: environment,
                        cursor: NotificationCursor(
                            windowStartMs: cursor.windowStartMs, windowEndMs: windowEnd, paginationToken: nil),
                        figures: state.figures, nowMs: nowMs())
                }
                throw SweepStop.failed(error.description)
            }
            state.count(calls: page.calls)
            state.figures.notificationsRead += Int64(page.signedPayloads.count)
            let corrections = try notificationCorrections(page.signedPayloads, &state)
            var next = NotificationCursor(windowStartMs: windowEnd, windowEndMs: nil, paginationToken: nil)
            if page.hasMore {
                guard let token = page.paginationToken, !token.isEmpty else {
                    throw SweepStop.failed("Apple said hasMore but gave no paginationToken (Get Notification History)")
                }
                next = NotificationCursor(
                    windowStartMs: cursor.windowStartMs, windowEndMs: windowEnd, paginationToken: token)
            }
            try await commit(corrections, checked: [], cursor: next, &state)
            output(
                "{\"page\":\(state.pages),\"source\":\"notification_history\","
                    + "\"notifications\":\(page.signedPayloads.count),\"corrections\":\(corrections.count),"
                    + "\"has_more\":\(page.hasMore),\"dry_run\":\(options.dryRun)}")
            guard page.hasMore else { return }
            cursor = next
        }
    }

    /// Why a sweep stops at signed data it cannot judge now (the revocation status of its chain is unavailable):
    /// skipping it would mark the page or the purchase done without knowing; the next sweep resumes at this page.
    private static func notJudgedNow(_ rejection: NotificationRejection) -> String {
        "signed data of Apple's answer could not be verified now (\(rejection.message)); this page is not recorded, "
            + "the next sweep resumes here"
    }

    /// The page's notifications the ledger never applied, as the records to send again.
    private func notificationCorrections(_ payloads: [String], _ state: inout SweepState) throws -> [Correction] {
        var verified: [(event: NotificationEvent, record: (key: [UInt8]?, value: [UInt8]))] = []
        for payload in payloads {
            guard let record = NotificationHistoryRecord.make(signedPayload: payload, receivedAtMs: nowMs()) else {
                state.rejected += 1
                logger.warning("an entry of Apple's notification history is not a notification's shape; not sent")
                continue
            }
            switch processor.process(record.value) {
            case .success(let event): verified.append((event, record))
            case .failure(let rejection) where rejection.isRetryable:
                throw SweepStop.failed(Self.notJudgedNow(rejection))
            case .failure(let rejection):
                state.rejected += 1
                logger.warning(
                    "a notification of Apple's history does not pass the verifier's checks; not sent",
                    [
                        "notification_uuid": .string(rejection.notificationUUID ?? ""),
                        "reason": .string(rejection.reason.rawValue), "error": .string(rejection.message),
                    ])
            }
        }
        let known = try store.knownEventIds(verified.map { $0.event.event.eventId })
        var corrections: [Correction] = []
        var seen: Set<String> = []
        for (notification, record) in verified {
            let event = notification.event
            guard seen.insert(event.eventId).inserted else { continue }
            let kind = LedgerEventKind.of(event.type.rawValue) ?? .noMoney
            let rescindsConsent =
                event.type == .info && event.notificationType == "RESCIND_CONSENT"
            guard
                ReconcileRules.notificationNeed(
                    kind: kind, rescindsConsent: rescindsConsent, applied: known.contains(event.eventId)) == .resend
            else { continue }
            let creditKey = event.transaction?.creditKey
            if event.type == .debit, let creditKey { state.explained.insert(creditKey) }
            corrections.append(
                Correction(
                    id: event.eventId, kind: .notification, eventType: event.type.rawValue, creditKey: creditKey,
                    topic: topics.notifications, key: record.key, value: record.value))
        }
        return corrections
    }

    // MARK: Get Refund History

    private func sweepRefunds(_ state: inout SweepState) async throws {
        guard state.budgetLeft > 0 else {
            state.budgetSpent(logger, "Get Refund History")
            return
        }
        let since = state.startedMs - Int64(settings.creditedWithinDays) * 86_400_000
        let limit = Int(min(state.budgetLeft * 4, 20_000))
        let candidates = try store.candidates(environment: environment, creditedSinceMs: since, limit: limit)
        // One lookup per customer id: a subscription's periods share their original transaction id.
        var order: [String] = []
        var groups: [String: [ReconcileCandidate]] = [:]
        for candidate in candidates {
            if groups[candidate.lookupId] == nil { order.append(candidate.lookupId) }
            groups[candidate.lookupId, default: []].append(candidate)
        }
        for lookupId in order {
            guard let members = groups[lookupId] else { continue }
            guard let history = try await refundHistory(of: lookupId, &state) else { return }
            try await compare(members, history: history, &state)
        }
    }

    /// Every page of the customer's refund history: nil when the budget ran out first (the purchases wait, not
    /// marked checked); `found: false` when Apple does not know the transaction.
    private func refundHistory(of lookupId: String, _ state: inout SweepState) async throws
        -> (signed: [String], found: Bool)?
    {
        var signed: [String] = []
        var revision: String?
        while true {
            guard state.budgetLeft > 0 else {
                state.budgetSpent(logger, "Get Refund History")
                return nil
            }
            switch await refunds.page(transactionId: lookupId, revision: revision) {
            case .success(let page):
                state.count(calls: page.calls)
                signed += page.signedTransactions
                guard page.hasMore else { return (signed, true) }
                guard let next = page.revision, !next.isEmpty else {
                    throw SweepStop.failed("Apple said hasMore but gave no revision (Get Refund History)")
                }
                revision = next
            case .failure(.notFound(let calls)):
                state.count(calls: calls)
                logger.warning(
                    "Get Refund History does not know a credited purchase's transaction in this environment",
                    ["transaction_id": .string(lookupId), "environment": .string(environment)])
                return (signed, false)
            case .failure(.failed(let message, let calls)):
                state.count(calls: calls)
                throw SweepStop.failed(message)
            }
        }
    }

    private func compare(
        _ members: [ReconcileCandidate], history: (signed: [String], found: Bool), _ state: inout SweepState
    ) async throws {
        var verified: [RefundDebitEvent.Refund] = []
        for jws in history.signed {
            switch refundEvents.refund(jws, environment: options.environment) {
            case .success(let refund): verified.append(refund)
            case .failure(let rejection) where rejection.isRetryable:
                throw SweepStop.failed(Self.notJudgedNow(rejection))
            case .failure(let rejection):
                state.rejected += 1
                logger.warning(
                    "a refunded transaction of Apple's refund history does not pass the checks; not applied",
                    ["reason": .string(rejection.reason.rawValue), "error": .string(rejection.message)])
            }
        }
        let appleRefunds = verified.map {
            ReconcileRules.AppleRefund(
                creditKey: $0.creditKey, transactionId: $0.transactionId, revocationDateMs: $0.revocationDateMs)
        }
        let refundedKeys = Array(Set(appleRefunds.map(\.creditKey))).sorted()
        let ledger = try store.purchases(refundedKeys)
        let resentEarlier = try store.debitedByNotificationCorrections(
            refundedKeys, sinceMs: state.startedMs - ReconcileRules.correctionPatienceMs)
        let correctionIds = appleRefunds.map(\.correctionId)
        // Apple not knowing the transaction checks nothing: no drift is judged from an empty history.
        var checked: [String: ReconcileRules.LedgerPurchase] = [:]
        if history.found { for member in members { checked[member.creditKey] = member.ledger } }
        // The drifts earlier sweeps recorded as unresolved, of these refunds and of these purchases as they stand.
        let driftIds =
            correctionIds
            + checked.map { ReconcileRules.reverseDriftId(creditKey: $0.key, $0.value) }
        let comparison = ReconcileRules.compare(
            checked: checked, refunds: appleRefunds, ledger: ledger, correctedNow: state.explained,
            resentEarlier: resentEarlier.subtracting(state.explained),
            corrections: try store.correctionStates(correctionIds),
            recordedBefore: try store.recordedUnresolved(driftIds), nowMs: state.startedMs)
        state.recordDrift(comparison, logger: logger)
        var corrections: [Correction] = []
        for correction in comparison.refundsToCorrect {
            guard
                let refund = verified.first(where: {
                    $0.transactionId == correction.transactionId && $0.revocationDateMs == correction.revocationDateMs
                })
            else { continue }
            let event = refundEvents.event(
                refund, eventId: correction.correctionId, environment: options.environment, receivedAtMs: nowMs())
            state.explained.insert(correction.creditKey)
            corrections.append(
                Correction(
                    id: correction.correctionId, kind: .refund, eventType: PurchaseEventType.debit.rawValue,
                    creditKey: correction.creditKey, topic: topics.events, key: event.key, value: event.value))
        }
        state.figures.purchasesChecked += Int64(members.count)
        try await commit(
            corrections, checked: members.map(\.creditKey), unresolved: comparison.unresolved, cursor: nil, &state)
        output(
            "{\"page\":\(state.pages),\"source\":\"refund_history\",\"purchases\":\(members.count),"
                + "\"refunds\":\(appleRefunds.count),\"corrections\":\(corrections.count),"
                + "\"dry_run\":\(options.dryRun)}")
    }

    // MARK: Recording and producing

    /// Commits one page (on a dry run only the sweep's figures), then produces what it newly recorded.
    private func commit(
        _ corrections: [Correction], checked: [String], unresolved: [ReconcileRules.Unresolved] = [],
        cursor: NotificationCursor?, _ state: inout SweepState
    ) async throws {
        state.pages += 1
        state.found += corrections.count
        guard !options.dryRun else {
            try store.updateSweep(state.sweepId, figures: state.figures)
            if let stop = options.stopAfterPages, state.pages >= stop { throw SweepStop.drill }
            return
        }
        let recorded = try store.commitPage(
            sweepId: state.sweepId, corrections: corrections, checked: checked, unresolved: unresolved,
            environment: environment, cursor: cursor, figures: state.figures, nowMs: nowMs())
        state.figures.correctionsRecorded += Int64(recorded.count)
        if let stop = options.stopAfterPages, state.pages >= stop { throw SweepStop.drill }
        try await produce(recorded, &state)
    }

    /// Produces `corrections` (concurrently), marks those Kafka acknowledged; any other stays recorded for the
    /// next sweep and fails this one.
    private func produce(_ corrections: [Correction], _ state: inout SweepState) async throws {
        guard let producer, !corrections.isEmpty else { return }
        let failures = await withTaskGroup(of: (String, String?).self) { group in
            for correction in corrections {
                group.addTask {
                    let failure = await producer.produce(
                        topic: correction.topic, key: correction.key, value: correction.value,
                        headers: correction.headers)
                    return (correction.id, failure)
                }
            }
            var failures: [String: String] = [:]
            for await (id, failure) in group { if let failure { failures[id] = failure } }
            return failures
        }
        let acknowledged = corrections.map(\.id).filter { failures[$0] == nil }
        try store.markProduced(acknowledged, nowMs: nowMs())
        state.figures.correctionsProduced += Int64(acknowledged.count)
        try store.updateSweep(state.sweepId, figures: state.figures)
        if let failure = failures.values.first {
            throw SweepStop.failed(
                "Kafka did not acknowledge \(failures.count) corrections (\(failure)); they stay recorded and the "
                    + "next sweep produces them again under the same ids")
        }
    }
}

/// Why a sweep stopped before its end.
enum SweepStop: Error {
    case failed(String)
    case drill

    var outcome: ReconcileOutcome {
        switch self {
        case .failed(let message): .failed(message)
        case .drill: .stoppedForDrill
        }
    }
}
