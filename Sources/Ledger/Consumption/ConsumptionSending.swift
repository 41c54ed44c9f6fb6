import AppStore
import Dispatch
import ReceiptModel

/// What Apple made of one Send Consumption Information call, as the responder acts on it.
enum ConsumptionSendOutcome: Sendable, Equatable {
    /// 2xx: Apple has the answer.
    case accepted(status: Int)
    /// A 4xx other than 401/429: our request was refused; retrying cannot help (recorded, not retried).
    case refused(status: Int?, error: String)
    /// Busy, rate-limited, unreachable, a 5xx or a 401 (a key being fixed): try again, not before `afterMs`.
    case retry(status: Int?, error: String, afterMs: Int64?)
}

/// Sends one answer to Apple (the seam the responder's tests replace).
protocol ConsumptionSending: Sendable {
    func send(
        transactionId: String, body: [UInt8], bundleId: String, environment: AppStoreEnvironment, deadline: DispatchTime
    ) async -> ConsumptionSendOutcome
}

/// Send Consumption Information v2 through the project's App Store Server API client: the same JWT, pacing and
/// 429 hold-backs as the verifier's calls.
struct ServerAPIConsumptionSender: ConsumptionSending {
    let client: AppStoreServerAPIClient

    func send(
        transactionId: String, body: [UInt8], bundleId: String, environment: AppStoreEnvironment, deadline: DispatchTime
    ) async -> ConsumptionSendOutcome {
        let answer = await client.sendConsumptionInformation(
            transactionId: transactionId, body: body, bundleId: bundleId, environment: environment, deadline: deadline)
        switch answer.result {
        case .success: return .accepted(status: 202)
        case .failure(let error): return Self.outcome(of: error)
        }
    }

    static func outcome(of error: ServerAPIError) -> ConsumptionSendOutcome {
        switch error.kind {
        case .notFound, .invalidTransactionId, .invalidRequest:
            return .refused(status: error.httpStatus, error: error.message)
        case .rateLimited:
            return .retry(status: error.httpStatus, error: error.message, afterMs: error.retryAfterMs.map(Int64.init))
        case .retryable, .unauthorized:
            return .retry(status: error.httpStatus, error: error.message, afterMs: nil)
        }
    }
}
