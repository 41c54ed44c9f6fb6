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
        guard
            let environment = Self.environment(
                local.environment, of: "app transaction", named: "the app transaction's receiptType",
                otherwise: completion)
        else { return }
        guard let client = confirmingClient(bundleId: local.bundleId, environment: environment),
            let bundleId = local.bundleId, let appTransactionId = local.appTransactionId, !appTransactionId.isEmpty
        else {
            completion(BackendAnswer(
                result: .appTransaction(AppTransactionMapping.appTransaction(local, environment: environment)),
                source: .signedTransaction, calls: 0, environment: environment))
            return
        }
        client.appTransactionInfo(
            id: appTransactionId, bundleId: bundleId, environment: environment, deadline: Self.deadline(request)
        ) { [self] answer in
            completion(Self.confirmation(
                answer, environment: environment,
                unknown: "the app transaction verified, but Apple knows no app transaction \(appTransactionId) of "
                    + "'\(bundleId)' in \(environment.rawValue)"
            ) { info in
                judgeAppTransactionInfo(
                    info, appTransactionId: appTransactionId, bundleId: bundleId, environment: environment,
                    calls: answer.calls)
            })
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
            return Self.refusedAnswer(error, member: "signedAppTransactionInfo", calls: calls)
        }
        if let mismatch = Self.mismatch(
            "app transaction", asked: appTransactionId, answered: payload.appTransactionId,
            isAbout: payload.appTransactionId == appTransactionId, bundleId: payload.bundleId, asked: bundleId,
            environment: payload.environment, asked: environment,
            signedFor: "receiptType \(payload.receiptType ?? "(none)")", calls: calls)
        {
            return mismatch
        }
        return BackendAnswer(
            result: .appTransaction(AppTransactionMapping.appTransaction(payload, environment: environment)),
            source: .serverAPI, calls: calls, environment: environment)
    }
}
