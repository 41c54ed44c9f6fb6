@testable import Catalog
import Dispatch
import ReceiptModel
import ServiceSupport
import Synchronization
import Testing

@testable import AppStore
import TestSupport

/// A backend that answers from a script, synchronously, and records what it was asked.
final class ScriptedBackend: ReceiptVerificationBackend {
    private let script: Locked<[BackendAnswer]>
    private let asked = Locked<[BackendRequest]>([])
    private let clock: ManualClock
    private let callDurationMs: Int

    init(_ answers: [BackendAnswer], clock: ManualClock, callDurationMs: Int = 0) {
        script = Locked(answers)
        self.clock = clock
        self.callDurationMs = callDurationMs
    }

    func verify(_ request: BackendRequest, completion: @escaping @Sendable (BackendAnswer) -> Void) {
        asked.withLock { $0.append(request) }
        clock.passTime(.milliseconds(callDurationMs))
        let answer = script.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        completion(answer ?? BackendAnswer(result: .retryable(.transient), calls: 1, message: "script exhausted"))
    }

    var requests: [BackendRequest] { asked.withLock { $0 } }
}

final class OutcomeBox: Sendable {
    private let value = Locked<[VerificationOutcome]>([])
    func set(_ outcome: VerificationOutcome) { value.withLock { $0.append(outcome) } }
    var outcomes: [VerificationOutcome] { value.withLock { $0 } }
}

@Suite struct ReceiptVerifierTests {
    static let policy = VerdictPolicy(allowedBundleIds: ["com.example.game"])
    static let receipt = AppleReceipt(
        environment: .production, bundleId: "com.example.game",
        inApp: [AppleTransaction(
            TransactionFields(
                transactionId: "42", productId: "gems", purchaseDateMs: 1))])

    static func valid(_ environment: AppStoreEnvironment = .production, calls: Int = 1) -> BackendAnswer {
        var receipt = receipt
        receipt.environment = environment
        return BackendAnswer(result: .receipt(receipt), calls: calls, appleStatus: 0, environment: environment)
    }

    static func unavailable(_ status: Int? = 21005, kind: StatusClassification.RetryKind = .transient) -> BackendAnswer
    {
        BackendAnswer(
            result: .retryable(kind), calls: 1, appleStatus: status, environment: .production,
            message: "status \(status ?? 0)")
    }

    struct Run {
        let clock = ManualClock()
        let backend: ScriptedBackend
        let verifier: ReceiptVerifier
        let box = OutcomeBox()

        let metrics = MetricsRegistry()
        let lines = CapturedLines()

        init(
            _ answers: [BackendAnswer], retryPolicy: AppleCallRetryPolicy = AppleCallRetryPolicy(), callDurationMs: Int = 0,
            random: Double = 0.5, timeoutMs: Int = 30_000, catalog: ProductCatalog? = nil,
            malformedBurst: MalformedReceiptBurstDetector.Configuration = .init()
        ) {
            backend = ScriptedBackend(answers, clock: clock, callDurationMs: callDurationMs)
            verifier = ReceiptVerifier(
                backend: backend, policy: ReceiptVerifierTests.policy, catalog: catalog, retryPolicy: retryPolicy,
                requestTimeoutMs: timeoutMs, malformedBurst: malformedBurst, clock: clock, random: { random },
                logger: Logger(label: "test", sink: lines), metrics: metrics)
        }

        func verify(
            deadlineMs: Int = 60_000, expectations: VerificationExpectations = .init(), receipt: String = "AAAA"
        ) -> VerificationOutcome? {
            let box = OutcomeBox()
            verifier.verify(
                receiptData: receipt, expectations: expectations, deadline: clock.deadline(after: .milliseconds(deadlineMs))
            ) {
                box.set($0)
            }
            clock.runUntilIdle()
            #expect(box.outcomes.count == 1, "completion must be called exactly once")
            return box.outcomes.first
        }

        /// Starts one verification per receipt before any retry runs (as concurrent submissions do), then runs
        /// every retry; returns the outcomes in receipt order.
        func verifyTogether(_ receipts: [String], deadlineMs: Int = 60_000) -> [VerificationOutcome?] {
            let boxes = receipts.map { _ in OutcomeBox() }
            for (receipt, box) in zip(receipts, boxes) {
                verifier.verify(
                    receiptData: receipt, expectations: .init(), deadline: clock.deadline(after: .milliseconds(deadlineMs))
                ) {
                    box.set($0)
                }
            }
            clock.runUntilIdle()
            for box in boxes { #expect(box.outcomes.count == 1, "completion must be called exactly once") }
            return boxes.map(\.outcomes.first)
        }
    }

    @Test func aValidReceiptIsVerifiedAtOnce() throws {
        let run = Run([Self.valid()])
        let outcome = try #require(run.verify(expectations: .init(transactionId: "42")))
        guard case .verdict(let verdict) = outcome else {
            Issue.record("not a verdict: \(outcome)")
            return
        }
        #expect(verdict.outcome == .verified)
        #expect(verdict.attempts == 1)
        #expect(verdict.environment == .production)
        #expect(verdict.bundleId == "com.example.game")
        #expect(verdict.appleStatus == 0)
        #expect(verdict.transactions.map(\.creditKey) == ["apple:production:42"])
        #expect(run.clock.scheduledDelays.isEmpty)
    }

    @Test func retriesWithBackoffThenSucceeds() throws {
        let policy = AppleCallRetryPolicy(maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 1_000)
        let run = Run(
            [Self.unavailable(), Self.unavailable(nil), Self.unavailable(21199), Self.valid()],
            retryPolicy: policy, random: 0.5)
        let outcome = try #require(run.verify())
        guard case .verdict(let verdict) = outcome else {
            Issue.record("not a verdict: \(outcome)")
            return
        }
        #expect(verdict.outcome == .verified)
        #expect(verdict.attempts == 4)
        #expect(run.clock.scheduledDelays == [.milliseconds(50), .milliseconds(100), .milliseconds(200)])
    }

    @Test func theRetryBudgetRunsOut() throws {
        let run = Run(Array(repeating: Self.unavailable(21009), count: 10), retryPolicy: AppleCallRetryPolicy(maxAttempts: 3))
        let outcome = try #require(run.verify())
        guard case .unavailable(let failure) = outcome else {
            Issue.record("not unavailable: \(outcome)")
            return
        }
        #expect(failure.reason == .appleUnavailable)
        #expect(failure.attempts == 3)
        #expect(failure.appleStatus == 21009)
        #expect(failure.message.contains("retry budget"))
        #expect(run.backend.requests.count == 3)
    }

    @Test func theDeadlineStopsRetries() throws {
        // Each call takes 400 ms of the 1 s budget; the second retry would start too late.
        let run = Run(
            Array(repeating: Self.unavailable(), count: 10),
            retryPolicy: AppleCallRetryPolicy(
                maxAttempts: 10,
                baseDelayMs: 100, maxDelayMs: 100), callDurationMs: 400, random: 0.999)
        let outcome = try #require(run.verify(deadlineMs: 1_000))
        guard case .unavailable(let failure) = outcome else {
            Issue.record("not unavailable: \(outcome)")
            return
        }
        #expect(failure.message.contains("deadline"))
        #expect(run.backend.requests.count == 2)
        // The second call may take only what is left of the deadline.
        #expect(run.backend.requests.map(\.timeoutMs) == [1_000, 501])
    }

    @Test func anExpiredDeadlineMakesNoCall() throws {
        let run = Run([Self.valid()])
        let outcome = try #require(run.verify(deadlineMs: 0))
        guard case .unavailable(let failure) = outcome else {
            Issue.record("not unavailable: \(outcome)")
            return
        }
        #expect(failure.attempts == 0)
        #expect(run.backend.requests.isEmpty)
    }

    @Test func theRequestTimeoutCapsEachCall() throws {
        let run = Run([Self.valid()], timeoutMs: 2_000)
        _ = run.verify(deadlineMs: 60_000)
        #expect(run.backend.requests.map(\.timeoutMs) == [2_000])
    }

    @Test func malformedReceiptsAreRetriedOnlyAFewTimesThenInvalid() throws {
        let run = Run(
            Array(repeating: Self.unavailable(21002, kind: .malformedReceipt), count: 10),
            retryPolicy: AppleCallRetryPolicy(maxAttempts: 6, malformedReceiptMaxAttempts: 3))
        let outcome = try #require(run.verify())
        guard case .verdict(let verdict) = outcome else {
            Issue.record("not a verdict: \(outcome)")
            return
        }
        #expect(verdict.outcome == .rejected)
        #expect(verdict.reason == .invalidReceipt)
        #expect(verdict.appleStatus == 21002)
        #expect(verdict.attempts == 3)
    }

    @Test func configurationErrorsAreNeverRetried() throws {
        let run = Run([
            BackendAnswer(result: .configurationError, calls: 1, appleStatus: 21004, environment: .production)
        ])
        let outcome = try #require(run.verify())
        guard case .configurationError(let failure) = outcome else {
            Issue.record("not config: \(outcome)")
            return
        }
        #expect(failure.reason == .configError)
        #expect(failure.appleStatus == 21004)
        #expect(failure.attempts == 1)
        #expect(run.backend.requests.count == 1)
    }

    @Test func permanentRejectionsAreNotRetried() throws {
        let run = Run([
            BackendAnswer(
                result: .rejected(.invalidReceipt), calls: 2, appleStatus: 21003,
                environment: .sandbox)
        ])
        let outcome = try #require(run.verify())
        guard case .verdict(let verdict) = outcome else {
            Issue.record("not a verdict: \(outcome)")
            return
        }
        #expect(verdict.reason == .invalidReceipt)
        #expect(verdict.attempts == 2)
        #expect(verdict.environment == .sandbox)
    }

    @Test func retriesStartAtTheEnvironmentLearnedEarlier() throws {
        let sandboxFailure = BackendAnswer(
            result: .retryable(.transient), calls: 2, appleStatus: 21005,
            environment: .sandbox)
        let run = Run([sandboxFailure, Self.valid(.sandbox)])
        let outcome = try #require(run.verify())
        guard case .verdict(let verdict) = outcome else {
            Issue.record("not a verdict: \(outcome)")
            return
        }
        #expect(verdict.environment == .sandbox)
        #expect(verdict.attempts == 3)
        #expect(run.backend.requests.map(\.startEnvironment) == [.production, .sandbox])
    }

    @Test func aRedirectThatThenFailedStillTeachesTheEnvironment() throws {
        // Production said 21007, then the sandbox call timed out: no status from the sandbox, but two calls.
        let timedOutAtSandbox = BackendAnswer(
            result: .retryable(.transient), calls: 2, appleStatus: nil,
            environment: .sandbox, message: "timeout")
        let run = Run([timedOutAtSandbox, Self.valid(.sandbox)])
        _ = try #require(run.verify())
        #expect(run.backend.requests.map(\.startEnvironment) == [.production, .sandbox])
    }

    @Test func afterCloseFailuresAreNotRetried() throws {
        let run = Run(Array(repeating: Self.unavailable(), count: 5), retryPolicy: AppleCallRetryPolicy(maxAttempts: 5))
        run.verifier.close()
        let outcome = try #require(run.verify())
        guard case .unavailable(let failure) = outcome else { Issue.record("not unavailable: \(outcome)"); return }
        #expect(failure.message.contains("shut down"))
        #expect(run.backend.requests.count == 1)
        #expect(run.clock.scheduledDelays.isEmpty)
    }

    @Test func verdictRulesApplyToTheAnswer() throws {
        let run = Run([Self.valid()])
        let outcome = try #require(run.verify(expectations: .init(transactionId: "43")))
        guard case .verdict(let verdict) = outcome else {
            Issue.record("not a verdict: \(outcome)")
            return
        }
        #expect(verdict.reason == .transactionNotFound)
    }

    static let malformed = unavailable(21002, kind: .malformedReceipt)
    static let smallBurst = MalformedReceiptBurstDetector.Configuration(
        windowSize: 10, minimumAnswers: 4, burstShare: 0.5, minimumReceipts: 3)

    @Test func twentyOhTwoForMostReceiptsAtOnceIsAnOutageNotAVerdict() throws {
        let run = Run(
            Array(repeating: Self.malformed, count: 100),
            retryPolicy: AppleCallRetryPolicy(maxAttempts: 4, malformedReceiptMaxAttempts: 2), malformedBurst: Self.smallBurst)
        let outcomes = run.verifyTogether((0..<6).map { "receipt-\($0)" })
        for outcome in outcomes {
            guard case .unavailable(let failure)? = outcome else {
                Issue.record("a 21002 during a burst reached a verdict: \(String(describing: outcome))")
                continue
            }
            #expect(failure.reason == .appleUnavailable)
            #expect(failure.appleStatus == 21002)
            #expect(failure.message.contains("burst"))
            #expect(failure.attempts == 4, "a burst spends the ordinary retry budget, not the 21002 one")
        }
        let metrics = run.metrics.render()
        #expect(metrics.contains("appstore_21002_burst 1"))
        #expect(metrics.contains(#"appstore_verifications_total{outcome="unavailable"} 6"#))
        #expect(run.lines.lines.contains { $0.contains("treating 21002 as an outage") })
    }

    @Test func twentyOhTwoForSeveralReceiptsBeforeABurstCanBeCalledIsNoVerdictYet() throws {
        // A verifier just started inside an Apple incident: two receipts answered 21002 twice each, fewer answers
        // than the detector's 20 needed to call a burst. Neither is judged malformed; the next round sees more.
        let run = Run(
            Array(repeating: Self.malformed, count: 4),
            retryPolicy: AppleCallRetryPolicy(maxAttempts: 4, malformedReceiptMaxAttempts: 2))
        let outcomes = run.verifyTogether(["first", "second"])
        for outcome in outcomes {
            guard case .unavailable(let failure)? = outcome else {
                Issue.record("a 21002 while a burst may be forming reached a verdict: \(String(describing: outcome))")
                continue
            }
            #expect(failure.reason == .appleUnavailable)
            #expect(failure.message.contains("may be the start of a burst"))
            #expect(failure.attempts == 2)
        }
        #expect(run.metrics.render().contains("appstore_21002_burst 0"))
    }

    @Test func afterABurstARepeated21002IsAnInvalidReceiptAgain() throws {
        let run = Run(
            Array(repeating: Self.malformed, count: 12) + Array(repeating: Self.valid(), count: 6)
                + Array(repeating: Self.malformed, count: 3),
            retryPolicy: AppleCallRetryPolicy(maxAttempts: 3, malformedReceiptMaxAttempts: 3), malformedBurst: Self.smallBurst)
        // Four receipts answered 21002 at once, three times each: a burst, so no verdict for any of them.
        #expect(run.verifyTogether((0..<4).map { "burst-\($0)" }).allSatisfy { $0?.isUnavailable == true })
        // Apple reads receipts again: the burst is over once 21002 is below half of the window.
        for index in 0..<6 { #expect(run.verify(receipt: "valid-\(index)")?.verdict?.outcome == .verified) }
        #expect(run.lines.lines.contains { $0.contains("21002 burst over") })
        #expect(run.metrics.render().contains("appstore_21002_burst 0"))
        // One receipt answered 21002 again and again is malformed.
        let verdict = try #require(run.verify(receipt: "broken")?.verdict)
        #expect(verdict.reason == .invalidReceipt)
        #expect(verdict.attempts == 3)
        #expect(run.backend.requests.count == 12 + 6 + 3)
    }

    @Test func theCatalogDecidesWhatIsCreditable() throws {
        let catalog = ProductCatalog(products: ["gems": .init(type: .consumable, credit: .object(["n": .integer(5)]))])
        let listed = try #require(Run([Self.valid()], catalog: catalog).verify()?.verdict)
        #expect(listed.outcome == .verified)
        #expect(listed.transactions.first?.credit == .object(["n": .integer(5)]))
        #expect(listed.transactions.first?.productType == .consumable)
        let unlisted = try #require(
            Run([Self.valid()], catalog: ProductCatalog(products: [:])).verify()?.verdict)
        #expect(unlisted.reason == .unknownProduct)
        #expect(unlisted.transactions.map(\.creditable) == [false])
    }

    @Test func unreadableRefundFieldsAreCountedAndLoggedByIdOnly() throws {
        var receipt = Self.receipt
        receipt.inApp[0].unreadableCancellationFields = ["cancellation_date_ms"]
        let run = Run([BackendAnswer(result: .receipt(receipt), calls: 1, appleStatus: 0, environment: .production)])
        let verdict = try #require(run.verify()?.verdict)
        #expect(verdict.reason == .refunded)
        #expect(run.metrics.render().contains("appstore_unreadable_cancellations_total 1"))
        let line = try #require(run.lines.lines.first { $0.contains("refund fields that cannot be read") })
        #expect(line.contains(#""transaction_ids":"42""#))
    }

    @Test func aRejectionNamesTheEnvironmentApplesAnswerNamed() throws {
        let run = Run([
            BackendAnswer(
                result: .rejected(.invalidReceipt), calls: 1, appleStatus: 21003, environment: .production,
                appleEnvironment: .sandbox)
        ])
        #expect(try #require(run.verify()?.verdict).environment == .sandbox)
    }

    @Test func outcomesBecomeResultMessages() {
        let submission = Submission(
            submissionId: "s1", receiptData: "AAAA", orderId: "o", userId: "u", submittedAtMs: 1)
        let failure = VerificationOutcome.unavailable(
            VerificationFailure(
                reason: .appleUnavailable, message: "m", appleStatus: 21005, environment: .production, attempts: 4))
        let result = failure.result(for: submission, verifiedAtMs: 99)
        #expect(result.outcome == .failed)
        #expect(result.reason == .appleUnavailable)
        #expect(result.attempts == 4)
        #expect(result.orderId == "o")
        #expect(result.verifiedAtMs == 99)
    }
}
