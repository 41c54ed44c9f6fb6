import AppStoreServerAPI
import Dispatch
import ReceiptModel

/// What Apple made of one Send Consumption Information call, as the responder acts on it.
enum ConsumptionSendOutcome: Sendable, Equatable {
    /// 2xx: Apple has the answer.
    case accepted(status: Int)
    /// A 4xx other than 401/429: our request was refused; retrying cannot help (recorded with Apple's `errorCode`,
    /// counted by it, alerted on; not retried).
    case refused(status: Int?, errorCode: Int?, error: String)
    /// Busy, rate-limited, unreachable, a 5xx or a 401 (a key being fixed): try again, not before `afterMs`.
    case retry(status: Int?, errorCode: Int?, error: String, afterMs: Int64?)
}

/// One call's outcome, and how many requests it made to Apple.
struct ConsumptionSendResult: Sendable, Equatable {
    var outcome: ConsumptionSendOutcome
    /// HTTP requests sent to Apple: 0 when the client held the call back itself (the endpoint on hold after another
    /// request's 429, no pacing slot before the deadline), 2 after a 401 asked again with a fresh token. A request
    /// whose answer was lost (a timeout) counts: Apple may have received it. The audit's `attempts` adds these up.
    var requestsSent: Int
}

/// Sends one answer to Apple (the seam the responder's tests replace).
protocol ConsumptionSending: Sendable {
    func send(
        transactionId: String, body: [UInt8], bundleId: String, environment: AppStoreEnvironment, deadline: DispatchTime
    ) async -> ConsumptionSendResult
}

/// Send Consumption Information v2 through the project's App Store Server API client: the same JWT, pacing and
/// 429 hold-backs as the verifier's calls.
struct ServerAPIConsumptionSender: ConsumptionSending {
    let client: AppStoreServerAPIClient

    func send(
        transactionId: String, body: [UInt8], bundleId: String, environment: AppStoreEnvironment, deadline: DispatchTime
    ) async -> ConsumptionSendResult {
        let answer = await client.sendConsumptionInformation(
            transactionId: transactionId, body: body, bundleId: bundleId, environment: environment, deadline: deadline)
        switch answer.result {
        case .success: return ConsumptionSendResult(outcome: .accepted(status: 202), requestsSent: answer.calls)
        case .failure(let error): return ConsumptionSendResult(outcome: Self.outcome(of: error), requestsSent: answer.calls)
        }
    }

    static func outcome(of error: ServerAPIError) -> ConsumptionSendOutcome {
        switch error.kind {
        case .notFound, .invalidTransactionId, .invalidRequest:
            return .refused(status: error.httpStatus, errorCode: error.errorCode, error: error.message)
        case .rateLimited where error.heldBack:
            // No request: Apple answered nothing (the status and code the client reports are the earlier 429's).
            return .retry(status: nil, errorCode: nil, error: error.message, afterMs: error.retryAfterMs.map(Int64.init))
        case .rateLimited:
            return .retry(
                status: error.httpStatus, errorCode: error.errorCode, error: error.message,
                afterMs: error.retryAfterMs.map(Int64.init))
        case .retryable, .unauthorized:
            return .retry(status: error.httpStatus, errorCode: error.errorCode, error: error.message, afterMs: nil)
        }
    }
}
