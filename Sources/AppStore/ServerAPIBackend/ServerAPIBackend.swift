import AppStoreServerAPI
import Dispatch
import ReceiptModel
import ServiceSupport
import SignedData

/// StoreKit 2 signed transactions, transaction ids and (with `RECEIPT_BACKEND=server-api`) legacy receipts, checked
/// with Apple's signed data and the App Store Server API. Every answer it accepts is Apple-signed data that verified
/// against our roots, mapped to the same `AppleReceipt` verifyReceipt answers become, so `VerdictRules` judge it.
///
/// - `signed_transaction`: verified locally (a refusal is `rejected`/`invalid_signature`, with the precise check
///   that failed). Xcode and LocalTesting data are never accepted. With `confirmSignedTransactions`, Get Transaction
///   Info is asked too, in the payload's environment, and Apple's current, verified state is what is judged
///   (`source: server_api`: a refund after the device signed it makes it not creditable); otherwise the local
///   payload is (`source: signed_transaction`). A payload the rules reject anyway (bundle not allowed, a sandbox
///   one under `SANDBOX_POLICY=reject`) is judged locally without asking Apple.
/// - `signed_app_transaction` (`ServerAPIBackend+AppTransactions.swift`): verified locally like a signed
///   transaction, then, with `confirmSignedTransactions`, confirmed with Get App Transaction Info; judged by
///   `AppTransactionRules` (app ownership: nothing to credit).
/// - `transaction_id`: Get Transaction Info, production first, then the sandbox (after 4040010, or a production 401
///   with a fresh token: apps without a release), each allowed bundle id in turn (the token names the app). Under
///   `SANDBOX_POLICY=reject` the sandbox is never asked: an id known only there is `transaction_not_found`, as
///   nothing Apple said names the sandbox. Not found anywhere: `rejected`/`transaction_not_found`, but only when
///   production said so: after a production 401 the answer is `config_error` (a wrong `rejected` would refuse a
///   paying customer for good; the DLQ record can be replayed). Each move from production to the sandbox is counted
///   in `appstore_server_api_sandbox_fallbacks_total{reason}` (`SandboxFallbackMetrics`). Apple's answers
///   are per app (the token's bundle id), so one app's "not found" says nothing about another's: every allowed app
///   is asked. A submission costs at most one call per (environment, allowed bundle id), plus the one retry with a
///   fresh token after a 401; each definitive "not found" is remembered for a while (`TransactionNotFoundMemory`),
///   so the same id again (a later submission, a retry round) asks only what Apple has not answered yet. An id
///   that is no UInt64's decimal text (ids from Kafka are validated before they get here) is refused without a call.
/// - `receipt_data`: the receipt's PKCS#7 signature checked against `APPLE_RECEIPT_ROOT_CERTIFICATES` at its
///   creation date (failing: `invalid_signature`; not a receipt: `invalid_receipt`), then Get Transaction History v2
///   with its first in-app transaction id, in the environment the signed receipt names (a receipt naming none:
///   production, then the sandbox after 4040010 or a production 401, as for a `transaction_id`), every page
///   verified. With an expected transaction id paging stops once it is found (newest first). A receipt the rules reject anyway
///   (bundle, sandbox policy, no purchases) is judged without asking Apple.
///
/// Retryable API failures are `.retryable` (a 429 or our hold after one: `.rateLimited`, with the time left), a 401
/// with a fresh token or a request Apple calls wrong are `.configurationError`. CPU work (signature checks) runs on
/// the calling thread or the HTTP client's completion queues, never on its network thread.
public final class ServerAPIBackend: ReceiptVerificationBackend {
    public struct Configuration: Sendable {
        /// `ALLOWED_BUNDLE_IDS` and `SANDBOX_POLICY` (which bundles to ask about; whether to ask the sandbox).
        public var policy: VerdictPolicy
        /// `SIGNED_TRANSACTION_CONFIRM=always` (needs a client): signed transactions and app transactions are
        /// confirmed with Apple.
        public var confirmSignedTransactions: Bool
        /// History pages read per receipt at most (20 transactions each); the verdict uses what was read.
        public var maxHistoryPages: Int
        /// How many Get Transaction Info "not found" answers to `transaction_id` submissions are remembered, and for
        /// how long (`TransactionNotFoundMemory`).
        public var notFoundMemory: TransactionNotFoundMemory.Limits

        public init(
            policy: VerdictPolicy, confirmSignedTransactions: Bool, maxHistoryPages: Int = 50,
            notFoundMemory: TransactionNotFoundMemory.Limits = TransactionNotFoundMemory.Limits()
        ) {
            self.policy = policy
            self.confirmSignedTransactions = confirmSignedTransactions
            self.maxHistoryPages = max(1, maxHistoryPages)
            self.notFoundMemory = notFoundMemory
        }
    }

    let client: AppStoreServerAPIClient?
    let signedData: AppleSignedDataVerifier
    private let receipts: AppReceiptVerifier?
    let configuration: Configuration
    private let logger: Logger
    /// Apple's recent "not found" answers to `transaction_id` lookups.
    let notFoundMemory: TransactionNotFoundMemory
    /// Lookups that went on from production to the sandbox (nil without metrics or without the API).
    private let fallbacks: SandboxFallbackMetrics?

    /// - Parameters:
    ///   - client: nil without API credentials (then only unconfirmed signed transactions can be verified).
    ///   - signedData: trusts `APPLE_ROOT_CERTIFICATES`.
    ///   - receipts: trusts `APPLE_RECEIPT_ROOT_CERTIFICATES`; nil unless receipts go to the Server API.
    ///   - clock: the not-found memory's time (tests pass a `ManualClock`).
    public init(
        client: AppStoreServerAPIClient?, signedData: AppleSignedDataVerifier, receipts: AppReceiptVerifier?,
        configuration: Configuration, logger: Logger, metrics: MetricsRegistry? = nil,
        clock: any ServiceClock = DispatchClock()
    ) {
        self.client = client
        self.signedData = signedData
        self.receipts = receipts
        var configuration = configuration
        if client == nil { configuration.confirmSignedTransactions = false }
        self.configuration = configuration
        self.logger = logger
        notFoundMemory = TransactionNotFoundMemory(limits: configuration.notFoundMemory, clock: clock)
        // Like the client's own families, only where the API is usable.
        if let metrics, client != nil { notFoundMemory.observe(metrics) }
        fallbacks = client == nil ? nil : metrics.map(SandboxFallbackMetrics.init)
    }

    public func source(for proof: PurchaseProof) -> VerificationSource {
        switch proof {
        case .signedTransaction, .signedAppTransaction:
            // A `signed_app_transaction` without an `appTransactionId` is judged locally too (`source` of the answer).
            return configuration.confirmSignedTransactions ? .serverAPI : .signedTransaction
        case .receipt, .transactionId:
            return .serverAPI
        }
    }

    /// Closes the HTTP client the API client uses (shared with verifyReceipt: idempotent).
    public func close() {
        client?.close()
    }

    public func verify(_ request: BackendRequest, completion: @escaping @Sendable (BackendAnswer) -> Void) {
        switch request.proof {
        case .signedTransaction(let jws):
            verifySignedTransaction(jws, request: request, completion: completion)
        case .transactionId(let id):
            verifyTransactionId(id, request: request, completion: completion)
        case .receipt(let base64):
            verifyReceipt(base64, request: request, completion: completion)
        case .signedAppTransaction(let jws):
            verifyAppTransaction(jws, request: request, completion: completion)
        }
    }

    // MARK: signed_transaction

    private func verifySignedTransaction(
        _ jws: String, request: BackendRequest, completion: @escaping @Sendable (BackendAnswer) -> Void
    ) {
        let verified: VerifiedJWS
        let identity: SignedTransactionIdentity
        do {
            verified = try signedData.verify(jws)
            identity = try verified.decode(SignedTransactionIdentity.self)
        } catch {
            completion(Self.refused(error, "the signed transaction was refused: \(error.message)",
                                    source: .signedTransaction, calls: 0))
            return
        }
        guard
            let environment = Self.environment(
                identity.environment, of: "signed transaction", named: "the signed transaction",
                otherwise: completion)
        else { return }
        // Judged on the device's copy alone: unconfirmed, or a verdict the rules give locally whatever Apple would
        // say (a bundle not allowed, a sandbox transaction under SANDBOX_POLICY=reject), which spends no call.
        guard let client = confirmingClient(bundleId: identity.bundleId, environment: environment),
            let bundleId = identity.bundleId, let transactionId = identity.transactionId
        else {
            let local: JWSTransactionPayload
            do {
                local = try verified.decode(JWSTransactionPayload.self)
            } catch {
                completion(Self.rejected(.invalidSignature, "the signed transaction was refused: \(error.message)",
                                         source: .signedTransaction, calls: 0))
                return
            }
            completion(BackendAnswer(
                result: .receipt(SignedTransactionMapping.receipt(
                    environment: environment, bundleId: local.bundleId, named: [local])),
                source: .signedTransaction, calls: 0, environment: environment))
            return
        }
        client.transactionInfo(
            transactionId: transactionId, bundleId: bundleId, environment: environment,
            deadline: Self.deadline(request)
        ) { [self] answer in
            completion(Self.confirmation(
                answer, environment: environment,
                unknown: "the signed transaction verified, but Apple does not know transaction \(transactionId) in "
                    + "\(environment.rawValue)"
            ) { info in
                judgeTransactionInfo(
                    info, expectedTransactionId: transactionId, bundleId: bundleId, environment: environment,
                    calls: answer.calls)
            })
        }
    }

    /// Get Transaction Info's signed answer, verified and checked to be about `expectedTransactionId` of
    /// `bundleId` in `environment`.
    private func judgeTransactionInfo(
        _ info: TransactionInfoResponse, expectedTransactionId: String, bundleId: String?,
        environment: AppStoreEnvironment, calls: Int
    ) -> BackendAnswer {
        let payload: JWSTransactionPayload
        do {
            payload = try verifiedTransaction(info.signedTransactionInfo)
        } catch {
            return Self.refusedAnswer(error, member: "signedTransactionInfo", calls: calls)
        }
        if let mismatch = Self.mismatch(
            "transaction", asked: expectedTransactionId, answered: payload.transactionId,
            isAbout: payload.transactionId == expectedTransactionId
                || payload.originalTransactionId == expectedTransactionId,
            bundleId: payload.bundleId, asked: bundleId, environment: payload.environment, asked: environment,
            signedFor: "environment \(payload.environment?.rawValue ?? "(none)")", calls: calls)
        {
            return mismatch
        }
        return BackendAnswer(
            // Apple's current state of the transaction: the device's copy (when there is one) says nothing it does not.
            result: .receipt(SignedTransactionMapping.receipt(
                environment: environment, bundleId: payload.bundleId, named: [payload])),
            source: .serverAPI, calls: calls, environment: environment)
    }

    // MARK: transaction_id

    private func verifyTransactionId(
        _ transactionId: String, request: BackendRequest, completion: @escaping @Sendable (BackendAnswer) -> Void
    ) {
        guard let client else {
            completion(BackendAnswer(
                result: .configurationError, source: .serverAPI, calls: 0,
                message: "a transaction_id can only be checked with the App Store Server API: set APPLE_ISSUER_ID, "
                    + "APPLE_KEY_ID and APPLE_PRIVATE_KEY_FILE"))
            return
        }
        // Submissions from Kafka were validated already (`malformed_submission` otherwise); this keeps any other
        // caller from spending quota on an id Apple cannot know.
        guard TransactionIdText.isValid(transactionId) else {
            completion(Self.rejected(
                .transactionNotFound,
                "'\(transactionId.prefix(40))' is not an Apple transaction id (the decimal text of a 64-bit unsigned "
                    + "integer): Apple was not asked", source: .serverAPI, calls: 0))
            return
        }
        var environments: [AppStoreEnvironment] = [.production]
        if configuration.policy.sandboxPolicy == .accept {
            environments = request.startEnvironment == .sandbox ? [.sandbox, .production] : [.production, .sandbox]
        }
        var plan: [(AppStoreEnvironment, String)] = []
        for environment in environments {
            for bundleId in configuration.policy.allowedBundleIds.sorted() { plan.append((environment, bundleId)) }
        }
        lookUp(
            transactionId, plan: plan[...], client: client, deadline: Self.deadline(request),
            progress: LookupProgress(), completion: completion)
    }

    /// What the walk over (environment, bundle id) has seen so far.
    private struct LookupProgress: Sendable {
        var calls = 0
        /// A production 401 with a fresh token: the key is wrong, or the app has no release yet.
        var productionUnauthorized: ServerAPIError?
        var sandboxAnswered = false
        var lastNotFound: ServerAPIError?
        /// Lookups answered from `notFoundMemory` without a call.
        var recalled = 0
    }

    private func lookUp(
        _ transactionId: String, plan: ArraySlice<(AppStoreEnvironment, String)>, client: AppStoreServerAPIClient,
        deadline: DispatchTime, progress: LookupProgress, completion: @escaping @Sendable (BackendAnswer) -> Void
    ) {
        guard let (environment, bundleId) = plan.first else {
            completion(notFoundEverywhere(transactionId, progress: progress))
            return
        }
        let key = TransactionNotFoundMemory.Key(
            environment: environment, bundleId: bundleId, transactionId: transactionId)
        if let remembered = notFoundMemory.recall(key) {
            var progress = progress
            progress.recalled += 1
            continueLookUp(
                transactionId, after: .failure(remembered), in: environment, bundleId: bundleId, plan: plan,
                client: client, deadline: deadline, progress: progress, completion: completion)
            return
        }
        client.transactionInfo(
            transactionId: transactionId, bundleId: bundleId, environment: environment, deadline: deadline
        ) { [self] answer in
            var progress = progress
            progress.calls += answer.calls
            if case .failure(let error) = answer.result { notFoundMemory.remember(key, error) }
            continueLookUp(
                transactionId, after: answer.result, in: environment, bundleId: bundleId, plan: plan, client: client,
                deadline: deadline, progress: progress, completion: completion)
        }
    }

    /// Apple's answer (or the remembered one) about the plan's first lookup: a verdict, or the next lookup.
    private func continueLookUp(
        _ transactionId: String, after result: Result<TransactionInfoResponse, ServerAPIError>,
        in environment: AppStoreEnvironment, bundleId: String, plan: ArraySlice<(AppStoreEnvironment, String)>,
        client: AppStoreServerAPIClient, deadline: DispatchTime, progress: LookupProgress,
        completion: @escaping @Sendable (BackendAnswer) -> Void
    ) {
        var progress = progress
        switch result {
        case .success(let info):
            completion(judgeTransactionInfo(
                info, expectedTransactionId: transactionId, bundleId: bundleId, environment: environment,
                calls: progress.calls))
        case .failure(let error) where error.kind == .notFound:
            if environment == .sandbox { progress.sandboxAnswered = true }
            progress.lastNotFound = error
            recordFallback(from: environment, to: plan.dropFirst().first?.0, progress: progress)
            lookUp(transactionId, plan: plan.dropFirst(), client: client, deadline: deadline, progress: progress,
                   completion: completion)
        case .failure(let error) where error.kind == .unauthorized && environment == .production:
            // Apps without a release get 401 from production; their purchases (App Review, TestFlight) are in
            // the sandbox. Whether the key is wrong shows there.
            progress.productionUnauthorized = error
            recordFallback(from: environment, to: plan.dropFirst().first?.0, progress: progress)
            lookUp(transactionId, plan: plan.dropFirst(), client: client, deadline: deadline, progress: progress,
                   completion: completion)
        case .failure(let error) where error.kind == .invalidTransactionId:
            completion(Self.rejected(
                .transactionNotFound,
                "'\(transactionId)' is not a transaction id: \(error.message)" + Self.recallNote(progress),
                source: .serverAPI, calls: progress.calls, appleStatus: error.errorCode))
        case .failure(let error):
            var answer = Self.answer(for: error, calls: progress.calls)
            // After production said "not here", a retry starts in the sandbox: say where the failure was.
            answer.environment = environment
            completion(answer)
        }
    }

    /// Counts a lookup that goes on from production to the sandbox (the next step of its plan), with why.
    private func recordFallback(
        from environment: AppStoreEnvironment, to next: AppStoreEnvironment?, progress: LookupProgress
    ) {
        guard environment == .production, next == .sandbox else { return }
        fallbacks?.record(progress.productionUnauthorized == nil ? .notFound : .productionUnauthorized)
    }

    private func notFoundEverywhere(_ transactionId: String, progress: LookupProgress) -> BackendAnswer {
        if let unauthorized = progress.productionUnauthorized {
            // Production refused the key, so its "not found" was never heard: the purchase may be a production one
            // (a released app whose key production refuses) as much as junk. Not `transaction_not_found`, which would
            // refuse a paying customer for good: a configuration error, held on the DLQ for a replay.
            var answer = Self.answer(for: unauthorized, calls: progress.calls)
            if configuration.policy.sandboxPolicy == .reject {
                answer.message = (answer.message ?? "") + " (SANDBOX_POLICY=reject: the sandbox, where the "
                    + "purchases of an app without a release are, was not asked)"
            } else if progress.sandboxAnswered {
                answer.message = (answer.message ?? "") + "; the sandbox does not know transaction \(transactionId) "
                    + "either (before the app's first release production answers 401: a purchase not in the "
                    + "sandbox is none; after it, production's 401 is the key's problem)"
            }
            return answer
        }
        let bundles = configuration.policy.allowedBundleIds.sorted().joined(separator: ", ")
        let places = configuration.policy.sandboxPolicy == .reject
            ? "production (SANDBOX_POLICY=reject: the sandbox was not asked)" : "production nor the sandbox"
        return Self.rejected(
            .transactionNotFound,
            "Apple knows transaction \(transactionId) in neither \(places) for \(bundles)" + Self.recallNote(progress),
            source: .serverAPI, calls: progress.calls, environment: nil,
            appleStatus: progress.lastNotFound?.errorCode)
    }

    /// Says how many of the lookups were Apple's answers remembered from the last minutes rather than new calls.
    private static func recallNote(_ progress: LookupProgress) -> String {
        guard progress.recalled > 0 else { return "" }
        return " (\(progress.recalled) of these answers remembered from Apple's answers of the last minutes: not asked "
            + "again)"
    }

    // MARK: receipt_data (RECEIPT_BACKEND=server-api)

    private func verifyReceipt(
        _ base64: String, request: BackendRequest, completion: @escaping @Sendable (BackendAnswer) -> Void
    ) {
        guard let client, let receipts else {
            completion(BackendAnswer(
                result: .configurationError, source: .serverAPI, calls: 0,
                message: "RECEIPT_BACKEND=server-api needs APPLE_ISSUER_ID, APPLE_KEY_ID and APPLE_PRIVATE_KEY_FILE"))
            return
        }
        let receipt: AppReceipt
        do {
            receipt = try receipts.verify(base64: base64)
        } catch {
            let reason: Reason = error.kind == .malformedReceipt ? .invalidReceipt : .invalidSignature
            completion(Self.rejected(
                reason, "the receipt was refused: \(error.message)", source: .serverAPI, calls: 0))
            return
        }
        // The receipt's own type (attribute 0, covered by the signature just checked) says where it lives.
        let named: AppStoreEnvironment?
        switch receipt.receiptType {
        case "Production"?: named = .production
        case "ProductionSandbox"?: named = .sandbox
        case .some(let other) where other.hasPrefix("Xcode") || other == "LocalTesting":
            completion(Self.rejected(
                .sandboxNotAllowed, "a StoreKit testing (\(other)) receipt: never accepted", source: .serverAPI,
                calls: 0))
            return
        default: named = nil
        }
        let localEnvironment = named ?? request.startEnvironment
        let local = AppleReceipt(environment: localEnvironment, bundleId: receipt.bundleId, inApp: [])
        let policy = configuration.policy
        guard !policy.rejectsUnasked(bundleId: receipt.bundleId, environment: named), let bundleId = receipt.bundleId
        else {
            completion(BackendAnswer(result: .receipt(local), source: .serverAPI, calls: 0,
                                     environment: localEnvironment))
            return
        }
        guard let anchor = receipt.inAppPurchases.lazy.compactMap({ $0.transactionId ?? $0.originalTransactionId })
            .first
        else {
            // No purchase to ask Apple about: the rules say no_purchases.
            completion(BackendAnswer(result: .receipt(local), source: .serverAPI, calls: 0,
                                     environment: localEnvironment))
            return
        }
        var environments: [AppStoreEnvironment]
        if let named {
            environments = [named]
        } else if policy.sandboxPolicy == .reject {
            environments = [.production]
        } else {
            environments = request.startEnvironment == .sandbox ? [.sandbox, .production] : [.production, .sandbox]
        }
        let history = HistoryWalk(
            anchor: anchor, receiptIds: Set(receipt.transactionIds), bundleId: bundleId, expectedTransactionId: request.expectations?.transactionId,
            deadline: Self.deadline(request))
        readHistory(history, environments: environments[...], client: client, completion: completion)
    }

    /// One receipt's Get Transaction History v2 walk: pages read and verified so far.
    private struct HistoryWalk: Sendable {
        let anchor: String
        /// The transaction ids the receipt itself lists.
        let receiptIds: Set<String>
        let bundleId: String
        let expectedTransactionId: String?
        let deadline: DispatchTime
        var calls = 0
        var pages = 0
        var revision: String?
        var payloads: [JWSTransactionPayload] = []
        var lastNotFound: ServerAPIError?
        /// Production answered 401 to a fresh token (an app without a release): the sandbox was asked next.
        var productionUnauthorized: ServerAPIError?

        /// Newest first, so a recent expected purchase is found in the first pages.
        var query: TransactionHistoryQuery { TransactionHistoryQuery(sort: .descending) }
    }

    private func readHistory(
        _ walk: HistoryWalk, environments: ArraySlice<AppStoreEnvironment>, client: AppStoreServerAPIClient,
        completion: @escaping @Sendable (BackendAnswer) -> Void
    ) {
        guard let environment = environments.first else {
            if let unauthorized = walk.productionUnauthorized {
                // Production's answer was never heard (401): not a verdict about the purchase (see notFoundEverywhere).
                var answer = Self.answer(for: unauthorized, calls: walk.calls)
                answer.message = (answer.message ?? "") + "; the sandbox has no history for the receipt's "
                    + "transaction \(walk.anchor) either"
                completion(answer)
                return
            }
            completion(Self.rejected(
                .transactionNotFound,
                "Apple has no transaction history for the receipt's transaction \(walk.anchor) (bundle "
                    + "\(walk.bundleId))", source: .serverAPI, calls: walk.calls, environment: nil,
                appleStatus: walk.lastNotFound?.errorCode))
            return
        }
        client.transactionHistoryPage(
            transactionId: walk.anchor, bundleId: walk.bundleId, environment: environment, query: walk.query,
            revision: walk.revision, deadline: walk.deadline
        ) { [self] answer in
            var walk = walk
            walk.calls += answer.calls
            switch answer.result {
            case .success(let page):
                walk.pages += 1
                for jws in page.signedTransactions {
                    do throws(SignedDataError) {
                        let payload = try verifiedTransaction(jws)
                        walk.payloads.append(payload)
                    } catch {
                        completion(Self.refused(
                            error,
                            "a signed transaction in Apple's history was refused: \(error.message) (check "
                                + "APPLE_ROOT_CERTIFICATES and APPLE_SERVER_API_URL)", source: .serverAPI,
                            calls: walk.calls))
                        return
                    }
                }
                let found = walk.expectedTransactionId.map { id in walk.payloads.contains { $0.transactionId == id } }
                if page.hasMore, found != true, walk.pages < configuration.maxHistoryPages {
                    walk.revision = page.revision
                    readHistory(walk, environments: environments, client: client, completion: completion)
                    return
                }
                if page.hasMore, found != true {
                    logger.warning(
                        "transaction history longer than the page limit: judged on the pages read",
                        ["pages": .int(walk.pages), "transactions": .int(walk.payloads.count)])
                }
                completion(judgeHistory(walk, environment: environment))
            case .failure(let error) where error.kind == .notFound:
                walk.lastNotFound = error
                walk.revision = nil
                if environment == .production, environments.dropFirst().first == .sandbox {
                    fallbacks?.record(.notFound)
                }
                readHistory(walk, environments: environments.dropFirst(), client: client, completion: completion)
            case .failure(let error)
            where error.kind == .unauthorized && environment == .production && environments.dropFirst().first == .sandbox:
                // As for a transaction_id: an app without a release gets 401 from production, and a receipt that
                // does not name its environment may be App Review's, in the sandbox.
                walk.productionUnauthorized = error
                walk.revision = nil
                fallbacks?.record(.productionUnauthorized)
                readHistory(walk, environments: environments.dropFirst(), client: client, completion: completion)
            case .failure(let error):
                var answer = Self.answer(for: error, calls: walk.calls)
                answer.environment = environment
                completion(answer)
            }
        }
    }

    private func judgeHistory(_ walk: HistoryWalk, environment: AppStoreEnvironment) -> BackendAnswer {
        for payload in walk.payloads {
            guard payload.bundleId == walk.bundleId else {
                return Self.rejected(
                    .bundleMismatch,
                    "Apple's history for the receipt of '\(walk.bundleId)' holds a transaction of "
                        + "'\(payload.bundleId ?? "(none)")'", source: .serverAPI, calls: walk.calls)
            }
            guard case .known(let signed) = SignedTransactionMapping.environment(payload.environment),
                signed == environment
            else {
                return Self.rejected(
                    .invalidReceipt,
                    "Apple's \(environment.rawValue) history holds a transaction signed for "
                        + "\(payload.environment?.rawValue ?? "(no environment)")", source: .serverAPI,
                    calls: walk.calls)
            }
        }
        return BackendAnswer(
            // The receipt's own purchases as `in_app`, the whole history as Apple's current view (a purchase or a
            // refund after the receipt was issued shows there), as verifyReceipt answers.
            result: .receipt(SignedTransactionMapping.receipt(
                environment: environment, bundleId: walk.bundleId,
                named: walk.payloads.filter { payload in payload.transactionId.map(walk.receiptIds.contains) ?? false },
                current: walk.payloads)),
            source: .serverAPI, calls: walk.calls, environment: environment)
    }

    // MARK: Helpers

    /// The client that confirms a device's signed copy of `bundleId` in `environment` with Apple, or nil when the copy
    /// is judged alone: unconfirmed (`confirmSignedTransactions` off, no Server API client), or a verdict the rules
    /// give whatever Apple would say, which spends no call.
    func confirmingClient(bundleId: String?, environment: AppStoreEnvironment) -> AppStoreServerAPIClient? {
        guard configuration.confirmSignedTransactions,
            !configuration.policy.rejectsUnasked(bundleId: bundleId, environment: environment)
        else { return nil }
        return client
    }

    private func verifiedTransaction(_ jws: String) throws(SignedDataError) -> JWSTransactionPayload {
        try signedData.verify(jws).decode(JWSTransactionPayload.self)
    }

    static func deadline(_ request: BackendRequest) -> DispatchTime {
        request.deadline ?? .now() + .milliseconds(request.timeoutMs ?? 30_000)
    }

    static func rejected(
        _ reason: Reason, _ message: String, source: VerificationSource, calls: Int,
        environment: AppStoreEnvironment? = nil, appleStatus: Int? = nil
    ) -> BackendAnswer {
        BackendAnswer(
            result: .rejected(reason), source: source, calls: calls, appleStatus: appleStatus,
            environment: environment, message: message)
    }

    /// Signed data that did not verify: `invalid_signature`, unless only the revocation status of its chain was
    /// unavailable (an OCSP responder outage is no verdict): then retryable like an Apple outage, never a rejection.
    static func refused(
        _ error: SignedDataError, _ message: String, source: VerificationSource, calls: Int
    ) -> BackendAnswer {
        guard error.isRetryable else { return rejected(.invalidSignature, message, source: source, calls: calls) }
        return BackendAnswer(
            result: .retryable(.transient), source: source, calls: calls,
            message: "revocation status unavailable: \(error.message)")
    }

    /// `refused` for a Server API answer's signed member (`signedTransactionInfo`, `signedAppTransactionInfo`).
    static func refusedAnswer(_ error: SignedDataError, member: String, calls: Int) -> BackendAnswer {
        refused(
            error,
            "the App Store Server API's \(member) was refused: \(error.message) (check APPLE_ROOT_CERTIFICATES and "
                + "APPLE_SERVER_API_URL)",
            source: .serverAPI, calls: calls)
    }

    /// A failure that is not "not found": retryable, rate limited, or our configuration.
    /// The environment a device's signed copy (`copy`) names in `field`; nil after answering `otherwise` for one never
    /// served: StoreKit testing data (Xcode, LocalTesting) is `sandbox_not_allowed`, an unknown or absent name
    /// `invalid_receipt`.
    static func environment(
        _ named: SignedEnvironment?, of copy: String, named field: String, otherwise: (BackendAnswer) -> Void
    ) -> AppStoreEnvironment? {
        switch SignedTransactionMapping.environment(named) {
        case .known(let environment):
            return environment
        case .testing(let name):
            otherwise(rejected(
                .sandboxNotAllowed, "a StoreKit testing (\(name)) \(copy): never accepted", source: .signedTransaction,
                calls: 0))
        case .unknown(let name):
            otherwise(rejected(
                .invalidReceipt, "\(field) names no known environment (\(name ?? "absent"))", source: .signedTransaction,
                calls: 0))
        }
        return nil
    }

    /// Why Apple's signed answer is not about what was asked, or nil when it is: about another `kind` (`transaction`,
    /// `app transaction`) than `askedId` (`isAbout` false; `answeredId` is the answer's) is `invalid_receipt`; another
    /// bundle than `asked` (nil: not checked) `bundle_mismatch`; signed for another environment than the one asked
    /// (`signedFor` names the field and its value) `invalid_receipt`.
    static func mismatch(
        _ kind: String, asked askedId: String, answered answeredId: String?, isAbout: Bool, bundleId: String?,
        asked askedBundleId: String?, environment: SignedEnvironment?, asked askedEnvironment: AppStoreEnvironment,
        signedFor: @autoclosure () -> String, calls: Int
    ) -> BackendAnswer? {
        guard isAbout else {
            return rejected(
                .invalidReceipt,
                "Apple's signed answer about \(kind) \(askedId) is about \(kind) \(answeredId ?? "(none)")",
                source: .serverAPI, calls: calls)
        }
        if let askedBundleId, bundleId != askedBundleId {
            return rejected(
                .bundleMismatch,
                "Apple's signed answer names bundle '\(bundleId ?? "(none)")', asked about '\(askedBundleId)'",
                source: .serverAPI, calls: calls)
        }
        guard SignedTransactionMapping.environment(environment) == .known(askedEnvironment) else {
            return rejected(
                .invalidReceipt, "Apple's \(askedEnvironment.rawValue) answer is signed for \(signedFor())",
                source: .serverAPI, calls: calls)
        }
        return nil
    }

    /// Apple's answer to the call confirming a signed copy: `judge`'s verdict on what Apple returned; Apple not knowing
    /// the id (`notFound`, `invalidTransactionId`) is `transaction_not_found` (`unknown` names what was asked); any
    /// other failure takes the usual retry, rate-limit or configuration path (`answer(for:calls:)`).
    static func confirmation<Response>(
        _ answer: AppStoreServerAPIClient.Answer<Response>, environment: AppStoreEnvironment, unknown: String,
        judge: (Response) -> BackendAnswer
    ) -> BackendAnswer {
        switch answer.result {
        case .success(let response):
            return judge(response)
        case .failure(let error) where error.kind == .notFound || error.kind == .invalidTransactionId:
            return rejected(
                .transactionNotFound, unknown + ": " + error.message, source: .serverAPI, calls: answer.calls,
                environment: environment, appleStatus: error.errorCode)
        case .failure(let error):
            return Self.answer(for: error, calls: answer.calls)
        }
    }

    static func answer(for error: ServerAPIError, calls: Int) -> BackendAnswer {
        let result: BackendAnswer.Result
        switch error.kind {
        case .rateLimited: result = .retryable(.rateLimited)
        case .retryable: result = .retryable(.transient)
        case .unauthorized, .invalidRequest: result = .configurationError
        case .notFound, .invalidTransactionId: result = .rejected(.transactionNotFound)
        }
        return BackendAnswer(
            result: result, source: .serverAPI, calls: calls, appleStatus: error.errorCode,
            environment: error.environment, message: error.message, retryAfterMs: error.retryAfterMs)
    }
}
