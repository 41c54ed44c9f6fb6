import AppStore
import Dispatch
import ReceiptModel

/// `SubmissionVerifying` over the App Store client: one round = one `ReceiptVerifier.verify` call with the
/// client's in-process retries, bounded by `roundDeadline`.
struct AppStoreSubmissionVerifier: SubmissionVerifying {
    let verifier: ReceiptVerifier
    let roundDeadline: Duration

    func verify(_ submission: Submission, completion: @escaping @Sendable (VerificationRoundOutcome) -> Void) {
        let deadline = DispatchTime.now() + .nanoseconds(Int(clamping: AppleCircuitBreaker.nanoseconds(roundDeadline)))
        verifier.verify(
            receiptData: submission.receiptData,
            expectations: VerificationExpectations(
                transactionId: submission.expectedTransactionId, productId: submission.expectedProductId),
            deadline: deadline
        ) { outcome in
            completion(Self.roundOutcome(outcome))
        }
    }

    static func roundOutcome(_ outcome: VerificationOutcome) -> VerificationRoundOutcome {
        switch outcome {
        case .verdict(let verdict):
            .verdict(verdict)
        case .unavailable(let failure):
            .unavailable(lastAppleStatus: failure.appleStatus, lastError: failure.message, attempts: failure.attempts)
        case .configurationError(let failure):
            .configurationError(appleStatus: failure.appleStatus, message: failure.message, attempts: failure.attempts)
        }
    }
}
