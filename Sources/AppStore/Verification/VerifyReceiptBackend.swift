import Dispatch
import HTTPClient
import ReceiptModel
import ServiceSupport
import Synchronization

/// The legacy verifyReceipt endpoint as a `ReceiptVerificationBackend`: POSTs the receipt to production (or to the
/// sandbox once known), follows 21007 (-> sandbox) and 21008 (-> production) once, decodes and classifies the answer.
///
/// The environment of a result is the one Apple's body names (`environment`), not the endpoint's: a production URL
/// pointed at Apple's sandbox host still yields `Sandbox` results. The endpoint counts only when Apple named none; a
/// body naming another environment than its endpoint is counted
/// (`appstore_verifyreceipt_environment_disagreements_total`) and logged.
public final class VerifyReceiptBackend: ReceiptVerificationBackend {
    public struct Endpoints: Sendable, Equatable {
        public var production: String
        public var sandbox: String

        public init(production: String, sandbox: String) {
            self.production = production
            self.sandbox = sandbox
        }

        public func url(for environment: AppStoreEnvironment) -> String {
            environment == .production ? production : sandbox
        }
    }

    private let client: any HTTPTransport
    private let endpoints: Endpoints
    private let sharedSecret: String?
    private let excludeOldTransactions: Bool
    private let metrics: VerifyReceiptMetrics?
    private let logger: Logger?
    /// Monotonic time of the last disagreement log line (at most one per `disagreementLogIntervalNs`).
    private let lastDisagreementLogNs = Locked<UInt64?>(nil)
    static let disagreementLogIntervalNs: UInt64 = 10_000_000_000

    /// - Parameters:
    ///   - client: `CurlHTTPClient` in the services (any `HTTPTransport`: a benchmark's canned answers).
    ///   - sharedSecret: sent as `password` only when non-nil and non-empty; never logged.
    ///   - excludeOldTransactions: asks Apple to send only the latest renewal of each subscription.
    ///   - metrics: `appstore_verifyreceipt_calls_total{environment,outcome}`,
    ///     `appstore_verifyreceipt_call_duration_seconds{environment}`,
    ///     `appstore_verifyreceipt_environment_disagreements_total{endpoint,apple}`.
    ///   - logger: environment disagreements (at most one line per 10 s).
    public init(
        client: any HTTPTransport, endpoints: Endpoints, sharedSecret: String?, excludeOldTransactions: Bool = false,
        metrics: MetricsRegistry? = nil, logger: Logger? = nil
    ) {
        self.client = client
        self.endpoints = endpoints
        self.sharedSecret = sharedSecret.flatMap { $0.isEmpty ? nil : $0 }
        self.excludeOldTransactions = excludeOldTransactions
        self.metrics = VerifyReceiptMetrics(metrics)
        self.logger = logger
    }

    /// Fails what is queued or in flight and closes the HTTP client (see `HTTPTransport.close`).
    public func close() {
        client.close()
    }

    public func verify(_ request: BackendRequest, completion: @escaping @Sendable (BackendAnswer) -> Void) {
        guard case .receipt(let receiptData) = request.proof else {
            completion(
                BackendAnswer(
                    result: .configurationError, source: .verifyReceipt, calls: 0,
                    message: "verifyReceipt only reads app receipts; a \(request.proof.fieldName) needs the App Store "
                        + "Server API (set APPLE_ISSUER_ID, APPLE_KEY_ID and APPLE_PRIVATE_KEY_FILE)"))
            return
        }
        let body = VerifyReceiptRequestBody.make(
            receiptData: receiptData, sharedSecret: sharedSecret,
            excludeOldTransactions: excludeOldTransactions)
        call(
            environment: request.startEnvironment, body: body, timeoutMs: request.timeoutMs,
            deadline: request.deadline, calls: 0, redirected: false, completion: completion)
    }

    /// A redirected call is not made with less time than this left before the attempt's deadline.
    static let minimumRedirectMs = 50

    private func call(
        environment: AppStoreEnvironment, body: [UInt8], timeoutMs: Int?, deadline: DispatchTime?, calls: Int,
        redirected: Bool, completion: @escaping @Sendable (BackendAnswer) -> Void
    ) {
        let request = HTTPClientRequest(
            url: endpoints.url(for: environment), body: body,
            headers: ["Content-Type: application/json", "Accept: application/json"], timeoutMs: timeoutMs)
        let startedAt = metrics == nil ? 0 : SystemTime.monotonicNanoseconds()
        client.send(request) { [self] result in
            let answer = Self.interpret(result, environment: environment, calls: calls + 1)
            metrics?.record(answer.classification, environment: environment, startedAt: startedAt)
            if case .receipt(let receipt) = answer.backendAnswer.result, receipt.unusableTransactionCount > 0 {
                metrics?.recordUnusableTransactions(receipt.unusableTransactionCount)
            }
            if let disagreement = answer.environmentDisagreement {
                reportDisagreement(disagreement, endpoint: environment, status: answer.appleStatus)
            }
            if case .redirect(let target) = answer.classification {
                // Followed once; an endpoint sending us back, or to itself, is Apple being confused: retry later.
                // An answer the verifier retries later, starting at `environment`.
                func retryLater(in environment: AppStoreEnvironment, because problem: String) {
                    completion(
                        BackendAnswer(
                            result: .retryable(.transient), calls: calls + 1, appleStatus: answer.appleStatus,
                            environment: environment, message: problem))
                }
                guard !redirected, target != environment else {
                    let problem = target == environment ? "redirected to itself" : "redirected back"
                    retryLater(
                        in: environment,
                        because: "\(environment.rawValue) verifyReceipt \(problem) (status \(answer.appleStatus ?? 0))")
                    return
                }
                var redirectTimeoutMs = timeoutMs
                if let deadline {
                    let now = DispatchTime.now().uptimeNanoseconds
                    let leftMs =
                        deadline.uptimeNanoseconds > now ? Int((deadline.uptimeNanoseconds - now) / 1_000_000) : 0
                    guard leftMs >= Self.minimumRedirectMs else {
                        // Where the receipt lives is known now (the verifier starts its retry there).
                        retryLater(
                            in: target,
                            because: "\(environment.rawValue) verifyReceipt redirected to \(target.rawValue) "
                                + "with \(leftMs) ms left before the deadline")
                        return
                    }
                    redirectTimeoutMs = min(timeoutMs ?? leftMs, leftMs)
                }
                call(
                    environment: target, body: body, timeoutMs: redirectTimeoutMs, deadline: deadline,
                    calls: calls + 1, redirected: true, completion: completion)
                return
            }
            completion(answer.backendAnswer)
        }
    }

    private func reportDisagreement(_ apple: String, endpoint: AppStoreEnvironment, status: Int?) {
        metrics?.recordEnvironmentDisagreement(endpoint: endpoint, apple: apple)
        guard let logger else { return }
        let now = SystemTime.monotonicNanoseconds()
        let due = lastDisagreementLogNs.withLock { last in
            guard last.map({ now &- $0 >= Self.disagreementLogIntervalNs }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return }
        logger.warning(
            "Apple's answer names another environment than the endpoint that gave it: results use Apple's "
                + "(check APPLE_VERIFY_RECEIPT_URL and APPLE_SANDBOX_VERIFY_RECEIPT_URL; logged at most every 10 s, "
                + "counted in appstore_verifyreceipt_environment_disagreements_total)",
            [
                "endpoint": .string(endpoint.rawValue), "apple_environment": .string(apple),
                "apple_status": .int(status ?? -1),
            ])
    }

    /// One HTTP exchange, decoded and classified. Internal for tests.
    struct Interpretation {
        var classification: StatusClassification
        var backendAnswer: BackendAnswer
        /// For a valid answer whose body names another environment than the endpoint's: what it named
        /// (`Production`, `Sandbox`, or `unrecognized`).
        var environmentDisagreement: String?
        var appleStatus: Int? { backendAnswer.appleStatus }
    }

    /// The environment a verifyReceipt body names: `Production` or `Sandbox` in any ASCII case; nil when absent or
    /// not one of them (Unicode case folding would also take `ſandbox`, with a long s, for Sandbox). Bytes only: it
    /// runs on every answer, where Foundation's `caseInsensitiveCompare` cost ~4,700 instructions (NSString bridging).
    static func environment(named name: String?) -> AppStoreEnvironment? {
        guard let name else { return nil }
        if equalsIgnoringASCIICase(name, "production") { return .production }
        if equalsIgnoringASCIICase(name, "sandbox") { return .sandbox }
        return nil
    }

    /// `text` is `lowercaseLetters` with any of its letters in either ASCII case.
    private static func equalsIgnoringASCIICase(_ text: String, _ lowercaseLetters: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: lowercaseLetters.utf8Start, count: lowercaseLetters.utf8CodeUnitCount)
        // OR-ing 0x20 lower-cases an ASCII letter and maps no other byte onto a lowercase letter.
        return text.utf8.elementsEqual(expected) { $0 | 0x20 == $1 }
    }

    static func interpret(
        _ result: Result<HTTPClientResponse, HTTPClientError>, environment: AppStoreEnvironment, calls: Int
    ) -> Interpretation {
        func answer(
            _ classification: StatusClassification, status: Int?, message: String?, receipt: AppleReceipt? = nil,
            appleEnvironment: AppStoreEnvironment? = nil, disagreement: String? = nil
        )
            -> Interpretation
        {
            let backendResult: BackendAnswer.Result
            switch classification {
            case .success:
                backendResult = receipt.map { .receipt($0) } ?? .retryable(.transient)
            case .redirect:
                backendResult = .retryable(.transient)  // replaced by the caller's redirect
            case .retry(let kind):
                backendResult = .retryable(kind)
            case .permanent(let reason):
                backendResult = .rejected(reason)
            case .configurationError:
                backendResult = .configurationError
            }
            return Interpretation(
                classification: classification,
                backendAnswer: BackendAnswer(
                    result: backendResult, calls: calls, appleStatus: status, environment: environment,
                    appleEnvironment: appleEnvironment, message: message),
                environmentDisagreement: disagreement)
        }

        let response: HTTPClientResponse
        switch result {
        case .failure(let error):
            // Timeouts, refused connections, TLS failures, shutdown: no answer from Apple, so nothing is decided.
            return answer(.retry(.transient), status: nil, message: "\(environment.rawValue) verifyReceipt: \(error)")
        case .success(let value):
            response = value
        }
        let decoded: VerifyReceiptResponse
        do {
            decoded = try VerifyReceiptResponse.decode(response.body)
        } catch {
            let classification = StatusClassification.of(httpStatus: response.status) ?? .retry(.transient)
            return answer(
                classification, status: nil,
                message: "\(environment.rawValue) verifyReceipt: HTTP \(response.status), \(error) "
                    + "(\(response.body.count) bytes)")
        }
        if let httpClassification = StatusClassification.of(httpStatus: response.status) {
            return answer(
                httpClassification, status: decoded.status,
                message: "\(environment.rawValue) verifyReceipt: HTTP \(response.status) with status \(decoded.status)")
        }
        let classification = StatusClassification.of(status: decoded.status, isRetryable: decoded.isRetryable)
        // Apple's word on the environment; the endpoint's only when Apple named none (or nothing recognizable).
        let named = Self.environment(named: decoded.environment)
        let appleEnvironment = named ?? environment
        switch classification {
        case .success:
            let receipt = AppleReceipt(
                environment: appleEnvironment, status: decoded.status, bundleId: decoded.bundleId,
                inApp: decoded.inApp, latestReceiptInfo: decoded.latestReceiptInfo,
                unusableTransactionCount: decoded.unusableTransactionCount,
                unusableTransactionIds: decoded.unusableTransactionIds)
            let disagreement =
                decoded.environment == nil || named == environment ? nil : named?.rawValue ?? "unrecognized"
            return answer(
                .success, status: decoded.status, message: nil, receipt: receipt, appleEnvironment: appleEnvironment,
                disagreement: disagreement)
        default:
            return answer(
                classification, status: decoded.status,
                message: "\(environment.rawValue) verifyReceipt answered status \(decoded.status)"
                    + (decoded.isRetryable.map { " (is_retryable: \($0))" } ?? ""),
                appleEnvironment: appleEnvironment)
        }
    }
}
