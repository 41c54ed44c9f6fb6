import Catalog
import Dispatch
import HTTPClient
import ReceiptModel
import ServiceSupport
import Synchronization

/// Verifies receipts: asks a backend (verifyReceipt by default), retries what may succeed later within the
/// submission's deadline, and turns Apple's acceptance into a verdict with `VerdictRules` and the product catalog.
///
/// 21002 ("malformed receipt data, or a temporary issue") is judged with a process-wide
/// `MalformedReceiptBurstDetector`: while most recent answers are 21002 across several receipts, a 21002 is an
/// outage (retried like a 5xx, no verdict); while one may be forming (too few answers yet, mostly 21002, other
/// receipts among them) a receipt's spent 21002 budget ends the round without a verdict; otherwise a receipt answered
/// 21002 `APPLE_RETRY_21002_MAX_ATTEMPTS` times is `invalid_receipt`.
///
/// Non-blocking: `verify` returns at once; backoff waits are timers, not sleeping threads. Safe from any thread.
public final class ReceiptVerifier: Sendable {
    private let backend: any ReceiptVerificationBackend
    private let policy: VerdictPolicy
    private let catalog: (any ProductCatalogSource)?
    private let retryPolicy: AppleCallRetryPolicy
    private let requestTimeoutMs: Int
    private let clock: any ServiceClock
    private let random: @Sendable () -> Double
    private let logger: Logger
    private let callsCounter: Counter?
    private let outcomeCounters: [String: Counter]
    private let unreadableCancellations: Counter?
    private let unreadableCrediting: Counter?
    private let burstDetector: Locked<MalformedReceiptBurstDetector>
    private let burstGauge: Gauge?
    private let burstAnswers: Counter?

    /// - Parameters:
    ///   - catalog: `PRODUCT_CATALOG_FILE` (nil: no catalog; transactions carry no `credit`).
    ///   - requestTimeoutMs: the longest one HTTP call may take (`APPLE_TIMEOUT_MS`); shortened to the time left.
    ///   - malformedBurst: when 21002 answers are an outage (`APPLE_21002_BURST_*`).
    ///   - clock, random: injected for tests; `random` returns values in [0, 1).
    public init(
        backend: any ReceiptVerificationBackend, policy: VerdictPolicy, catalog: (any ProductCatalogSource)? = nil,
        retryPolicy: AppleCallRetryPolicy = AppleCallRetryPolicy(), requestTimeoutMs: Int = 30_000,
        malformedBurst: MalformedReceiptBurstDetector.Configuration = .init(),
        clock: any ServiceClock = DispatchClock(),
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        logger: Logger, metrics: MetricsRegistry? = nil
    ) {
        self.backend = backend
        self.policy = policy
        self.catalog = catalog
        self.retryPolicy = retryPolicy
        self.requestTimeoutMs = requestTimeoutMs
        self.clock = clock
        self.random = random
        self.logger = logger
        burstDetector = Locked(MalformedReceiptBurstDetector(configuration: malformedBurst))
        unreadableCancellations = metrics?.counter(
            "appstore_unreadable_cancellations_total",
            help: "Transactions whose refund fields Apple sent but could not be read: not creditable (fail closed)")
        unreadableCrediting = metrics?.counter(
            "appstore_unreadable_crediting_fields_total",
            help: "Transactions whose quantity or is_upgraded Apple sent but could not be read: not creditable")
        burstGauge = metrics?.gauge(
            "appstore_21002_burst", help: "1 while verifyReceipt answers 21002 in a burst: 21002 is an outage")
        burstAnswers = metrics?.counter(
            "appstore_21002_outage_answers_total",
            help: "21002 answers treated as an Apple outage (a burst) instead of a malformed receipt")
        callsCounter = metrics?.counter("appstore_verify_attempts_total", help: "Backend attempts made to Apple")
        var counters: [String: Counter] = [:]
        if let metrics {
            for name in ["verified", "rejected", "unavailable", "config_error"] {
                counters[name] = metrics.counter(
                    "appstore_verifications_total", help: "Receipt verifications by how they ended",
                    labels: [("outcome", name)])
            }
        }
        outcomeCounters = counters
    }

    /// The verifyReceipt verifier the settings describe: a libcurl client, the two endpoints and the policies.
    /// - Parameter catalog: the product catalog to judge with (`ProductCatalogFile` for `PRODUCT_CATALOG_FILE`).
    public static func verifyReceipt(
        settings: AppStoreSettings, catalog: (any ProductCatalogSource)? = nil, logger: Logger,
        metrics: MetricsRegistry? = nil
    ) throws(HTTPClientError) -> ReceiptVerifier {
        let client = try CurlHTTPClient(configuration: settings.httpClientConfiguration, metrics: metrics)
        let backend = VerifyReceiptBackend(
            client: client, endpoints: settings.endpoints, sharedSecret: settings.sharedSecret,
            excludeOldTransactions: settings.excludeOldTransactions, metrics: metrics, logger: logger)
        return ReceiptVerifier(
            backend: backend, policy: settings.verdictPolicy, catalog: catalog, retryPolicy: settings.retryPolicy,
            requestTimeoutMs: settings.timeoutMs, malformedBurst: settings.malformedBurst, logger: logger,
            metrics: metrics)
    }

    /// Closes the backend (for verifyReceipt: the libcurl client). Verifications still running end `.unavailable`.
    /// Call after draining: wait for the completions you care about first.
    public func close() {
        isClosed.store(true, ordering: .releasing)
        backend.close()
    }

    private let isClosed = Atomic<Bool>(false)

    /// An attempt is not started with less time than this left before the deadline.
    static let minimumAttemptMs = 50

    /// Verifies one proof of purchase. `completion` is called exactly once, on any thread, no later than shortly
    /// after `deadline` (an HTTP call never outlives it by more than libcurl's timer granularity).
    ///
    /// - Parameters:
    ///   - proof: normalized (see `Submission.decodeValidated`).
    ///   - deadline: when a verdict is no longer useful; retries stop before it and the outcome is `.unavailable`.
    public func verify(
        proof: PurchaseProof, expectations: VerificationExpectations, deadline: DispatchTime,
        completion: @escaping @Sendable (VerificationOutcome) -> Void
    ) {
        let state = AttemptState(proof: proof, expectations: expectations, deadline: deadline)
        attempt(state, completion: completion)
    }

    /// `verify(proof:)` for a base64 app receipt (one line, see `ReceiptData.normalize`).
    public func verify(
        receiptData: String, expectations: VerificationExpectations, deadline: DispatchTime,
        completion: @escaping @Sendable (VerificationOutcome) -> Void
    ) {
        verify(proof: .receipt(receiptData), expectations: expectations, deadline: deadline, completion: completion)
    }

    /// `verify` for async callers.
    public func verify(
        receiptData: String, expectations: VerificationExpectations, deadline: DispatchTime
    ) async -> VerificationOutcome {
        await verify(proof: .receipt(receiptData), expectations: expectations, deadline: deadline)
    }

    /// `verify` for async callers.
    public func verify(
        proof: PurchaseProof, expectations: VerificationExpectations, deadline: DispatchTime
    ) async -> VerificationOutcome {
        await withCheckedContinuation { continuation in
            verify(proof: proof, expectations: expectations, deadline: deadline) {
                continuation.resume(returning: $0)
            }
        }
    }

    /// Per-verification progress; owned by one verification's chain of callbacks, which never overlap.
    private struct AttemptState: Sendable {
        let proof: PurchaseProof
        let expectations: VerificationExpectations
        let deadline: DispatchTime
        var attempts = 0
        var calls = 0
        var malformedAttempts = 0
        var environment: AppStoreEnvironment = .production
        /// The receipt's identity for the burst detector, computed at its first 21002.
        var burstKey: Int?
    }

    private func source(_ state: AttemptState) -> VerificationSource {
        backend.source(for: state.proof)
    }

    private func remainingMs(until deadline: DispatchTime) -> Int {
        let now = clock.monotonicNanoseconds()
        let end = deadline.uptimeNanoseconds
        return end > now ? Int((end - now) / 1_000_000) : 0
    }

    private func attempt(_ state: AttemptState, completion: @escaping @Sendable (VerificationOutcome) -> Void) {
        let remaining = remainingMs(until: state.deadline)
        guard remaining >= Self.minimumAttemptMs else {
            finish(
                .unavailable(
                    VerificationFailure(
                        reason: .appleUnavailable, message: "the deadline passed before Apple could be asked",
                        appleStatus: nil, environment: nil, attempts: state.calls, source: source(state))), completion)
            return
        }
        // The backend's HTTP calls run on real time: the deadline is `remaining` from now on that clock (the same
        // instant as `state.deadline` with the real verification clock).
        let request = BackendRequest(
            proof: state.proof, startEnvironment: state.environment,
            timeoutMs: min(requestTimeoutMs, remaining),
            deadline: .now() + .milliseconds(remaining), expectations: state.expectations)
        callsCounter?.increment()
        backend.verify(request) { [self] answer in
            var state = state
            state.attempts += 1
            state.calls += answer.calls
            // Where the receipt lives, once known (Apple answered there, or redirected us there): retries start there.
            if let environment = answer.environment, answer.appleStatus != nil || answer.calls > 1 {
                state.environment = environment
            }
            let inBurst = observeStatus(of: answer, state: &state)
            handle(answer, state: state, malformedIsOutage: inBurst, completion: completion)
        }
    }

    /// Feeds an answer that carried a status to the burst detector; true when it is a 21002 during a burst.
    private func observeStatus(of answer: BackendAnswer, state: inout AttemptState) -> Bool {
        // Only verifyReceipt has 21002 bursts; App Store Server API errorCodes say nothing about them.
        guard answer.appleStatus != nil, answer.source == .verifyReceipt else { return false }
        let observed: MalformedReceiptBurstDetector.Answer
        if case .retryable(.malformedReceipt) = answer.result {
            // Distinct receipts within this process only: Swift's seeded hash of the receipt data.
            let key = state.burstKey ?? state.proof.hashValue
            state.burstKey = key
            observed = .malformed(receipt: key)
        } else {
            observed = .other
        }
        let now = clock.monotonicNanoseconds()
        let (transition, isBurst, answers, malformed, receipts) = burstDetector.withLock { detector in
            let transition = detector.record(observed, nowNs: now)
            return (
                transition, detector.isBurst, detector.answersInWindow, detector.malformedInWindow,
                detector.malformedReceiptsInWindow
            )
        }
        switch transition {
        case .started:
            burstGauge?.set(1)
            logger.error(
                "Apple answers 21002 for most receipts: treating 21002 as an outage (retried, never rejected) "
                    + "until Apple reads receipts again",
                ["answers": .int(answers), "status_21002": .int(malformed), "receipts": .int(receipts)])
        case .ended:
            burstGauge?.set(0)
            logger.info(
                "21002 burst over: a receipt answered 21002 repeatedly is invalid_receipt again",
                ["answers": .int(answers), "status_21002": .int(malformed)])
        case nil:
            break
        }
        guard case .malformed = observed, isBurst else { return false }
        burstAnswers?.increment()
        return true
    }

    private func mayJudgeMalformed(_ state: AttemptState) -> Bool {
        let receipt = state.burstKey ?? state.proof.hashValue
        return burstDetector.withLock { $0.mayJudgeMalformed(receipt: receipt) }
    }

    private func handle(
        _ answer: BackendAnswer, state: AttemptState, malformedIsOutage: Bool,
        completion: @escaping @Sendable (VerificationOutcome) -> Void
    ) {
        switch answer.result {
        case .receipt(let receipt):
            let verdict = VerdictRules.evaluate(
                receipt, expectations: state.expectations, policy: policy, catalog: catalog?.currentCatalog)
            if !verdict.unreadableCancellationIds.isEmpty {
                unreadableCancellations?.increment(by: verdict.unreadableCancellationIds.count)
                logger.warning(
                    "Apple's answer carries refund fields that cannot be read: those transactions are not creditable",
                    [
                        "transaction_ids": .string(verdict.unreadableCancellationIds.prefix(20).joined(separator: ",")),
                        "count": .int(verdict.unreadableCancellationIds.count),
                        "outcome": .string(verdict.outcome.rawValue),
                    ])
            }
            if !verdict.unreadableCreditingIds.isEmpty {
                unreadableCrediting?.increment(by: verdict.unreadableCreditingIds.count)
                logger.warning(
                    "Apple's answer carries a quantity or is_upgraded that cannot be read: those transactions are not "
                        + "creditable",
                    [
                        "transaction_ids": .string(verdict.unreadableCreditingIds.prefix(20).joined(separator: ",")),
                        "count": .int(verdict.unreadableCreditingIds.count),
                        "outcome": .string(verdict.outcome.rawValue),
                    ])
            }
            if receipt.unusableTransactionCount > 0 {
                logger.warning(
                    "Apple's answer held transactions without a usable id, product or purchase date; skipped them",
                    [
                        "unusable_transactions": .int(receipt.unusableTransactionCount),
                        "usable_transactions": .int(receipt.inApp.count + receipt.latestReceiptInfo.count),
                        "outcome": .string(verdict.outcome.rawValue),
                    ])
            }
            finish(
                .verdict(
                    ReceiptVerdict(
                        outcome: verdict.outcome, reason: verdict.reason, message: verdict.message,
                        // verifyReceipt's status; the Server API has none for an answer it gave (errorCodes only).
                        appleStatus: answer.source == .verifyReceipt ? receipt.status : answer.appleStatus,
                        environment: receipt.environment, bundleId: receipt.bundleId,
                        transactions: verdict.transactions, attempts: state.calls, source: answer.source)),
                completion)
        case .appTransaction(let app):
            let verdict = AppTransactionRules.evaluate(app, policy: policy)
            finish(
                .verdict(
                    ReceiptVerdict(
                        outcome: verdict.outcome, reason: verdict.reason, message: verdict.message,
                        appleStatus: answer.appleStatus, environment: app.environment, bundleId: app.bundleId,
                        transactions: [], attempts: state.calls, source: answer.source,
                        appTransaction: verdict.appTransaction)),
                completion)
        case .rejected(let reason):
            finish(
                .verdict(
                    ReceiptVerdict(
                        outcome: reason.outcome, reason: reason, message: answer.message,
                        appleStatus: answer.appleStatus,
                        environment: answer.resultEnvironment, bundleId: nil, transactions: [], attempts: state.calls,
                        source: answer.source)),
                completion)
        case .configurationError:
            logger.error(
                "Apple rejected our request or credentials: verifications fail until the configuration is fixed",
                [
                    "apple_status": .int(answer.appleStatus ?? -1), "attempts": .int(state.calls),
                    "source": .string(answer.source.rawValue),
                ])
            // Server API messages name the settings to check themselves.
            let hint = answer.source == .verifyReceipt ? ": check APPLE_SHARED_SECRET and the verifyReceipt URLs" : ""
            finish(
                .configurationError(
                    VerificationFailure(
                        reason: .configError,
                        message: (answer.message ?? "configuration error") + hint,
                        appleStatus: answer.appleStatus, environment: answer.resultEnvironment, attempts: state.calls,
                        source: answer.source)),
                completion)
        case .retryable where isClosed.load(ordering: .acquiring):
            finish(
                .unavailable(
                    VerificationFailure(
                        reason: .appleUnavailable,
                        message: "the verifier shut down; last: \(answer.message ?? "no answer")",
                        appleStatus: answer.appleStatus, environment: answer.resultEnvironment, attempts: state.calls,
                        source: answer.source)),
                completion)
        case .retryable(.rateLimited):
            // Held back after a 429: retry in this round only if the hold ends with time left for an attempt;
            // otherwise end the round now (the verifier does not count it: lag, not failure).
            let remaining = remainingMs(until: state.deadline)
            let waitMs = max(answer.retryAfterMs ?? remaining, 0)
            if state.attempts < retryPolicy.maxAttempts, remaining - waitMs >= Self.minimumAttemptMs {
                let next = state
                clock.schedule(after: .milliseconds(waitMs)) { [self] in attempt(next, completion: completion) }
                return
            }
            finish(
                .unavailable(
                    VerificationFailure(
                        reason: .appleUnavailable,
                        message: "rate limited by the App Store Server API after \(state.attempts) attempt(s); last: "
                            + (answer.message ?? "429"),
                        appleStatus: answer.appleStatus, environment: answer.resultEnvironment, attempts: state.calls,
                        source: answer.source, rateLimited: true)),
                completion)
        case .retryable(let answeredKind):
            var state = state
            // During a burst a 21002 says nothing about this receipt: it spends the ordinary budget, like a 5xx.
            let kind: StatusClassification.RetryKind = malformedIsOutage ? .transient : answeredKind
            if kind == .malformedReceipt { state.malformedAttempts += 1 }
            let decision = retryPolicy.decide(
                attemptsMade: state.attempts, malformedAttempts: state.malformedAttempts, kind: kind,
                remainingMs: remainingMs(until: state.deadline), minimumAttemptMs: Self.minimumAttemptMs,
                unitRandom: random())
            switch decision {
            case .retry(let delayMs):
                logger.debug(
                    "retrying Apple",
                    [
                        "attempt": .int(state.attempts), "delay_ms": .int(delayMs),
                        "apple_status": .int(answer.appleStatus ?? -1),
                    ])
                let next = state
                clock.schedule(after: .milliseconds(delayMs)) { [self] in attempt(next, completion: completion) }
            case .giveUp
            where kind == .malformedReceipt
                && state.malformedAttempts >= retryPolicy.malformedReceiptMaxAttempts
                && !mayJudgeMalformed(state):
                // Other receipts answer 21002 too and too few answers are in to call it a burst: no verdict yet; the
                // next round sees more of Apple's answers.
                finish(
                    .unavailable(
                        VerificationFailure(
                            reason: .appleUnavailable,
                            message: "Apple answered 21002 \(state.malformedAttempts) times while other receipts' "
                                + "21002s may be the start of a burst: no verdict this round",
                            appleStatus: answer.appleStatus, environment: answer.resultEnvironment,
                            attempts: state.calls, source: answer.source)),
                    completion)
            case .giveUp
            where kind == .malformedReceipt
                && state.malformedAttempts >= retryPolicy.malformedReceiptMaxAttempts:
                // Repeated 21002: the receipt itself is malformed, not Apple.
                finish(
                    .verdict(
                        ReceiptVerdict(
                            outcome: .rejected, reason: .invalidReceipt,
                            message: "Apple answered 21002 (malformed receipt data) \(state.malformedAttempts) times",
                            appleStatus: answer.appleStatus, environment: answer.resultEnvironment, bundleId: nil,
                            transactions: [],
                            attempts: state.calls, source: source(state))), completion)
            case .giveUp, .deadlineTooClose:
                let why = decision == .giveUp ? "retry budget spent" : "deadline reached"
                let last =
                    malformedIsOutage
                    ? "21002 during a burst of 21002 across receipts (an Apple outage)" : answer.message ?? "no answer"
                finish(
                    .unavailable(
                        VerificationFailure(
                            reason: .appleUnavailable,
                            message: "\(why) after \(state.attempts) attempt(s); last: \(last)",
                            appleStatus: answer.appleStatus, environment: answer.resultEnvironment,
                            attempts: state.calls, source: answer.source)),
                    completion)
            }
        }
    }

    private func finish(_ outcome: VerificationOutcome, _ completion: @Sendable (VerificationOutcome) -> Void) {
        let name: String
        switch outcome {
        case .verdict(let verdict): name = verdict.outcome.rawValue
        case .unavailable: name = "unavailable"
        case .configurationError: name = "config_error"
        }
        outcomeCounters[name]?.increment()
        completion(outcome)
    }
}
