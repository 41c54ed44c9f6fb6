import AppStoreServerAPI
import ReceiptModel
import SignedData

/// `signed_app_transaction`: the app transaction a StoreKit 2 app sends (`AppTransaction.shared`).
///
/// Verified locally exactly like a signed transaction (the same `AppleSignedDataVerifier`, so the same roots, chain
/// policy and signature check; the chain is validated at `receiptCreationDate`, as Apple's libraries do for app
/// transactions): a refusal is `rejected`/`invalid_signature`. Its environment is its `receiptType` (Apple's app
/// transaction has no `environment` member): Xcode and LocalTesting data are `sandbox_not_allowed`; an unknown or
/// absent one is `invalid_receipt`. With `confirmSignedTransactions`, Get App
/// Transaction Info is asked with its `appTransactionId` in the payload's environment for its bundle id, Apple's
/// signed answer verified and checked to be the same app transaction of the same app and environment, and that
/// answer is judged (`source: server_api`); Apple not knowing it (4040019, 4040010, 4000006) is
/// `transaction_not_found`, and its 429s, 5xx and 401s take the verifier's usual retry, rate-limit and
/// configuration paths. Unconfirmed, or without an `appTransactionId` to ask with (app transactions signed before
/// 2025), the device's copy is judged (`source: signed_transaction`). A payload the rules reject anyway (bundle not
/// allowed, a sandbox one under `SANDBOX_POLICY=reject`) is judged without asking Apple.
extension ServerAPIBackend {
    func verifyAppTransaction(
        _ jws: String, request: BackendRequest, completion: @escaping @Sendable (BackendAnswer) -> Void
    ) {
        let local: JWSAppTransactionPayload
        do {
            local = try signedData.verify(jws, as: JWSAppTransactionPayload.self, signedDate: \.validationDateMs)
                .payload
        } catch {
            completion(Self.refused(
                error, "the app transaction was refused: \(error.message)", source: .signedTransaction, calls: 0))
            return
        }
        let environment: AppStoreEnvironment
        switch SignedTransactionMapping.environment(local.environment) {
        case .known(let known): environment = known
        case .testing(let name):
            completion(Self.rejected(
                .sandboxNotAllowed, "a StoreKit testing (\(name)) app transaction: never accepted",
                source: .signedTransaction, calls: 0))
            return
        case .unknown(let name):
            completion(Self.rejected(
                .invalidReceipt, "the app transaction's receiptType names no known environment (\(name ?? "absent"))",
                source: .signedTransaction, calls: 0))
            return
        }
        let policy = configuration.policy
        guard configuration.confirmSignedTransactions, let client, let bundleId = local.bundleId,
            policy.allowedBundleIds.contains(bundleId), !(environment == .sandbox && policy.sandboxPolicy == .reject),
            let appTransactionId = local.appTransactionId, !appTransactionId.isEmpty
        else {
            completion(BackendAnswer(
                result: .appTransaction(AppTransactionMapping.appTransaction(local, environment: environment)),
                source: .signedTransaction, calls: 0, environment: environment))
            return
        }
        client.appTransactionInfo(
            id: appTransactionId, bundleId: bundleId, environment: environment, deadline: Self.deadline(request)
        ) { [self] answer in
            switch answer.result {
            case .success(let info):
                completion(judgeAppTransactionInfo(
                    info, appTransactionId: appTransactionId, bundleId: bundleId, environment: environment,
                    calls: answer.calls))
            case .failure(let error) where error.kind == .notFound || error.kind == .invalidTransactionId:
                completion(Self.rejected(
                    .transactionNotFound,
                    "the app transaction verified, but Apple knows no app transaction \(appTransactionId) of "
                        + "'\(bundleId)' in \(environment.rawValue): \(error.message)",
                    source: .serverAPI, calls: answer.calls, environment: environment, appleStatus: error.errorCode))
            case .failure(let error):
                completion(Self.answer(for: error, calls: answer.calls))
            }
        }
    }

    /// Get App Transaction Info's signed answer, verified and checked to be about `appTransactionId` of `bundleId`
    /// in `environment`.
    private func judgeAppTransactionInfo(
        _ info: AppTransactionInfoResponse, appTransactionId: String, bundleId: String,
        environment: AppStoreEnvironment, calls: Int
    ) -> BackendAnswer {
        let payload: JWSAppTransactionPayload
        do {
            payload = try signedData.verify(
                info.signedAppTransactionInfo, as: JWSAppTransactionPayload.self, signedDate: \.validationDateMs
            ).payload
        } catch {
            return Self.refused(
                error,
                "the App Store Server API's signedAppTransactionInfo was refused: \(error.message) (check "
                    + "APPLE_ROOT_CERTIFICATES and APPLE_SERVER_API_URL)",
                source: .serverAPI, calls: calls)
        }
        guard payload.appTransactionId == appTransactionId else {
            return Self.rejected(
                .invalidReceipt,
                "Apple's signed answer about app transaction \(appTransactionId) is about app transaction "
                    + "\(payload.appTransactionId ?? "(none)")", source: .serverAPI, calls: calls)
        }
        guard payload.bundleId == bundleId else {
            return Self.rejected(
                .bundleMismatch,
                "Apple's signed answer names bundle '\(payload.bundleId ?? "(none)")', asked about '\(bundleId)'",
                source: .serverAPI, calls: calls)
        }
        guard case .known(let signedEnvironment) = SignedTransactionMapping.environment(payload.environment),
            signedEnvironment == environment
        else {
            return Self.rejected(
                .invalidReceipt,
                "Apple's \(environment.rawValue) answer is signed for receiptType "
                    + "\(payload.receiptType ?? "(none)")", source: .serverAPI, calls: calls)
        }
        return BackendAnswer(
            result: .appTransaction(AppTransactionMapping.appTransaction(payload, environment: signedEnvironment)),
            source: .serverAPI, calls: calls, environment: signedEnvironment)
    }
}
