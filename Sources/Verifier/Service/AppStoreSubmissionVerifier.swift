import AppStore
import Dispatch
import ReceiptModel
import ServiceSupport

/// `SubmissionVerifying` over the App Store client: one round = one `ReceiptVerifier.verify` call with the
/// client's in-process retries, bounded by `roundDeadline`.
struct AppStoreSubmissionVerifier: SubmissionVerifying {
    let verifier: ReceiptVerifier
    let roundDeadline: Duration

    func verify(_ submission: Submission, completion: @escaping @Sendable (VerificationOutcome) -> Void) {
        let deadline = DispatchTime.now() + .nanoseconds(Int(clamping: roundDeadline.clampedNanoseconds))
        verifier.verify(
            proof: submission.proof, expectations: VerificationExpectations(submission), deadline: deadline,
            completion: completion)
    }
}
