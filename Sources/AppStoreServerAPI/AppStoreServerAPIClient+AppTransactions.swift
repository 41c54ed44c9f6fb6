import Dispatch
import ReceiptModel

/// Get App Transaction Info's answer (`AppTransactionInfoResponse`): `{"signedAppTransactionInfo": "<JWS>"}`. Verify
/// the JWS before using it. A 200 without it is not an answer (decoding fails: retryable).
public struct AppTransactionInfoResponse: Decodable, Sendable, Equatable {
    public var signedAppTransactionInfo: String

    public init(signedAppTransactionInfo: String) {
        self.signedAppTransactionInfo = signedAppTransactionInfo
    }
}

extension AppStoreServerAPIClient {
    /// Get App Transaction Info: `GET /inApps/v1/transactions/appTransactions/{transactionId}` in `environment`, for
    /// the app `bundleId` (the token's `bid`), paced like every call (Apple's 50/s). Apple takes any id of the
    /// customer: an `appTransactionId`, a transaction id or an original transaction id. Apple's errors: 400
    /// 4000006 (not a transaction id: `.invalidTransactionId`), 404 4040019 AppTransactionDoesNotExist and
    /// 4040010 TransactionIdNotFound (`.notFound`), 429, 5xx. The answer's `signedAppTransactionInfo` is NOT
    /// verified here.
    public func appTransactionInfo(
        id: String, bundleId: String, environment: AppStoreEnvironment, deadline: DispatchTime,
        completion: @escaping @Sendable (Answer<AppTransactionInfoResponse>) -> Void
    ) {
        call(
            .appTransactionInfo, environment: environment, method: .get,
            path: "/inApps/v1/transactions/appTransactions/" + URLComponent.encode(id), body: [], bundleId: bundleId,
            deadline: deadline, completion: completion)
    }

    /// `appTransactionInfo` for async callers.
    public func appTransactionInfo(
        id: String, bundleId: String, environment: AppStoreEnvironment, deadline: DispatchTime
    ) async -> Answer<AppTransactionInfoResponse> {
        await withCheckedContinuation { continuation in
            appTransactionInfo(id: id, bundleId: bundleId, environment: environment, deadline: deadline) {
                continuation.resume(returning: $0)
            }
        }
    }
}
