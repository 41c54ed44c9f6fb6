import AppStore
import Kafka
import ServiceSupport

/// One consumed submission through the verifier's own per-message steps, without Kafka and without the engine's
/// bookkeeping (admission, windows, offsets, metrics): `MessageTriage` decodes and validates the message,
/// `AppStoreSubmissionVerifier` runs one round at Apple through `verifier`, and `RoundOutcomeRouter` turns the
/// round's end into the output records, with their bytes. These are the same values `VerificationEngine` calls in the
/// same order (`process`, `startRound`, `roundEnded`, `writeOutcome`); nothing is reimplemented here. It exists so
/// that bench/verifier-path-bench can count the instructions of that work per message with callgrind (issue 26); the
/// service does not use it.
public struct SubmissionMessagePath: Sendable {
    private let triage: MessageTriage
    private let verifier: AppStoreSubmissionVerifier
    private let router: RoundOutcomeRouter

    /// - Parameters:
    ///   - verifier: the App Store client (a benchmark gives it a `VerifyReceiptBackend` over a canned transport).
    ///   - roundDeadline: `VERIFIER_ROUND_DEADLINE_MS`.
    public init(topics: TopicNames, verifier: ReceiptVerifier, roundDeadline: Duration = .seconds(60)) {
        let factory = OutputFactory(topics: topics)
        triage = MessageTriage(factory: factory)
        self.verifier = AppStoreSubmissionVerifier(verifier: verifier, roundDeadline: roundDeadline)
        router = RoundOutcomeRouter(factory: factory, policy: RetryRoundPolicy())
    }

    /// The records the verifier would publish for `message`, passed to `completion` (once, on any thread; on the
    /// calling thread when the verifier's transport answers synchronously). A retry record not yet due yields none.
    public func process(
        _ message: KafkaMessage, nowMs: Int64, completion: @escaping @Sendable ([OutgoingRecord]) -> Void
    ) {
        switch triage.triage(message, nowMs: nowMs) {
        case .malformed(let records, _, _):
            completion(records)
        case .waitUntil:
            completion([])
        case .verify(let job):
            verifier.verify(job.submission) { [router] outcome in
                completion(router.route(outcome, job: job, breakerOpen: false, nowMs: nowMs).records)
            }
        }
    }
}
