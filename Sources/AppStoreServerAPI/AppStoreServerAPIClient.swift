import Dispatch
import Foundation
import HTTPClient
import ReceiptModel
import ServiceSupport
import SignedData

/// The App Store Server API over the libcurl client (the same multi loop and in-flight window as verifyReceipt,
/// HTTP/2 where Apple offers it): Get Transaction Info, Get Transaction History v2 and Get Notification History.
///
/// Every call:
/// - is paced (`ServerAPIPacer`: a token bucket per endpoint and environment, and a hold after a 429 during which
///   calls are answered `.rateLimited` at once without a request);
/// - carries `Authorization: Bearer <ES256 JWT>` for the bundle id asked about, one cached token per bundle id; on
///   a 401 the token is dropped and the call made once more with a fresh one (a 401 again is `.unauthorized`);
/// - is classified (`ServerAPIError.Kind`) so callers need not know Apple's error codes.
///
/// The client asks exactly the environment it is told: falling back from production to the sandbox is the
/// caller's decision (`ServerAPIBackend` does it under `SANDBOX_POLICY`). It never verifies signed data either:
/// callers verify every JWS it returns. Completions run on the HTTP client's completion queues (never on the
/// network thread) or, for calls refused before a request, on the calling thread or a pacing timer. Safe to share.
public final class AppStoreServerAPIClient: Sendable {
    /// Base URLs: `https://api.storekit.apple.com` and `https://api.storekit-sandbox.apple.com`, or the fake's.
    public struct Endpoints: Sendable, Equatable {
        public var production: String
        public var sandbox: String

        public init(production: String, sandbox: String) {
            self.production = Self.trimmed(production)
            self.sandbox = Self.trimmed(sandbox)
        }

        public func baseURL(for environment: AppStoreEnvironment) -> String {
            environment == .production ? production : sandbox
        }

        private static func trimmed(_ url: String) -> String {
            var url = url
            while url.hasSuffix("/") { url.removeLast() }
            return url
        }
    }

    /// What a call produced, and how many HTTP requests it took (0 when refused before any, 2 after a 401 retry).
    public struct Answer<Value: Sendable>: Sendable {
        public var result: Result<Value, ServerAPIError>
        public var calls: Int
        /// The HTTP status of the last answer (nil when no request was answered: refused before one, or a transport
        /// failure), for audit lines.
        public var httpStatus: Int?

        public init(result: Result<Value, ServerAPIError>, calls: Int, httpStatus: Int? = nil) {
            self.result = result
            self.calls = calls
            self.httpStatus = httpStatus
        }
    }

    public let endpoints: Endpoints
    private let http: CurlHTTPClient
    private let tokens: AppStoreServerAPITokenProvider
    private let pacer: ServerAPIPacer
    private let requestTimeoutMs: Int
    private let logger: Logger
    private let metrics: ServerAPIMetrics?
    private let wallClockMs: @Sendable () -> Int64

    /// - Parameters:
    ///   - http: the shared libcurl client.
    ///   - tokens: signs the bearer tokens (`APPLE_ISSUER_ID`, `APPLE_KEY_ID`, `APPLE_PRIVATE_KEY_FILE`).
    ///   - pacer: pacing and 429 hold-backs (share one per process).
    ///   - requestTimeoutMs: the longest one HTTP request may take (`APPLE_TIMEOUT_MS`), shortened to the deadline.
    ///   - wallClockMs: epoch milliseconds, to read `Retry-After` times (injectable for tests).
    public init(
        http: CurlHTTPClient, endpoints: Endpoints, tokens: AppStoreServerAPITokenProvider, pacer: ServerAPIPacer,
        requestTimeoutMs: Int = 30_000, logger: Logger, metrics: MetricsRegistry? = nil,
        wallClockMs: @escaping @Sendable () -> Int64 = { SystemTime.wallMilliseconds() }
    ) {
        self.http = http
        self.endpoints = endpoints
        self.tokens = tokens
        self.pacer = pacer
        self.requestTimeoutMs = requestTimeoutMs
        self.logger = logger
        self.metrics = ServerAPIMetrics(metrics, pacer: pacer)
        self.wallClockMs = wallClockMs
    }

    /// Closes the HTTP client (shared with verifyReceipt; idempotent): calls in flight end `.retryable`.
    public func close() {
        http.close()
    }

    // MARK: Endpoints

    /// Get Transaction Info: `GET /inApps/v1/transactions/{transactionId}` in `environment`, for the app
    /// `bundleId` (the token's `bid`). The answer's `signedTransactionInfo` is NOT verified here.
    public func transactionInfo(
        transactionId: String, bundleId: String, environment: AppStoreEnvironment, deadline: DispatchTime,
        completion: @escaping @Sendable (Answer<TransactionInfoResponse>) -> Void
    ) {
        call(
            .transactionInfo, environment: environment, method: .get,
            path: "/inApps/v1/transactions/" + URLComponent.encode(transactionId), body: [], bundleId: bundleId,
            deadline: deadline, completion: completion)
    }

    /// One page of Get Transaction History v2: `GET /inApps/v2/history/{transactionId}?revision=...&<query>`.
    /// Pass the previous page's `revision` (nil for the first page) and the same `query` each time; stop when
    /// `hasMore` is false. The `signedTransactions` are NOT verified here.
    public func transactionHistoryPage(
        transactionId: String, bundleId: String, environment: AppStoreEnvironment,
        query: TransactionHistoryQuery = TransactionHistoryQuery(), revision: String?, deadline: DispatchTime,
        completion: @escaping @Sendable (Answer<HistoryResponse>) -> Void
    ) {
        let queryString = query.queryString(revision: revision)
        call(
            .transactionHistory, environment: environment, method: .get,
            path: "/inApps/v2/history/" + URLComponent.encode(transactionId)
                + (queryString.isEmpty ? "" : "?" + queryString),
            body: [], bundleId: bundleId, deadline: deadline, completion: completion)
    }

    /// One page of Get Notification History: `POST /inApps/v1/notifications/history?paginationToken=...` with
    /// `request` as the JSON body. Pass the previous page's `paginationToken` (nil for the first page) and the same
    /// `request` each time; stop when `hasMore` is false. The `signedPayload`s are NOT verified here.
    public func notificationHistoryPage(
        _ request: NotificationHistoryRequest, paginationToken: String?, bundleId: String,
        environment: AppStoreEnvironment, deadline: DispatchTime,
        completion: @escaping @Sendable (Answer<NotificationHistoryResponse>) -> Void
    ) {
        let body: [UInt8]
        do {
            body = Array(try JSONEncoder().encode(request))
        } catch {
            completion(
                Answer(
                    result: .failure(
                        ServerAPIError(
                            .invalidRequest, "cannot encode the notification history request: \(error)",
                            environment: environment)), calls: 0))
            return
        }
        call(
            .notificationHistory, environment: environment, method: .post,
            path: "/inApps/v1/notifications/history"
                + (paginationToken.map { "?paginationToken=" + URLComponent.encode($0) } ?? ""),
            body: body, bundleId: bundleId, deadline: deadline, completion: completion)
    }

    /// `transactionInfo` for async callers.
    public func transactionInfo(
        transactionId: String, bundleId: String, environment: AppStoreEnvironment, deadline: DispatchTime
    ) async -> Answer<TransactionInfoResponse> {
        await withCheckedContinuation { continuation in
            transactionInfo(
                transactionId: transactionId, bundleId: bundleId, environment: environment, deadline: deadline
            ) { continuation.resume(returning: $0) }
        }
    }

    /// `transactionHistoryPage` for async callers.
    public func transactionHistoryPage(
        transactionId: String, bundleId: String, environment: AppStoreEnvironment,
        query: TransactionHistoryQuery = TransactionHistoryQuery(), revision: String?, deadline: DispatchTime
    ) async -> Answer<HistoryResponse> {
        await withCheckedContinuation { continuation in
            transactionHistoryPage(
                transactionId: transactionId, bundleId: bundleId, environment: environment, query: query,
                revision: revision, deadline: deadline
            ) { continuation.resume(returning: $0) }
        }
    }

    /// `notificationHistoryPage` for async callers.
    public func notificationHistoryPage(
        _ request: NotificationHistoryRequest, paginationToken: String?, bundleId: String,
        environment: AppStoreEnvironment, deadline: DispatchTime
    ) async -> Answer<NotificationHistoryResponse> {
        await withCheckedContinuation { continuation in
            notificationHistoryPage(
                request, paginationToken: paginationToken, bundleId: bundleId, environment: environment,
                deadline: deadline
            ) { continuation.resume(returning: $0) }
        }
    }

    // MARK: One call

    private struct CallContext: Sendable {
        let key: ServerAPIPacing.Key
        let method: HTTPMethod
        let url: String
        let body: [UInt8]
        let bundleId: String
        let deadline: DispatchTime
    }

    /// One call of `endpoint` (paced, signed, classified); endpoint methods in extensions of this type build on it.
    /// A `Value` of `ServerAPINoContent` takes any 2xx without reading its body (Apple's `Void` answers).
    func call<Value: Decodable & Sendable>(
        _ endpoint: ServerAPIEndpoint, environment: AppStoreEnvironment, method: HTTPMethod, path: String,
        body: [UInt8], bundleId: String, deadline: DispatchTime,
        completion: @escaping @Sendable (Answer<Value>) -> Void
    ) {
        let context = CallContext(
            key: ServerAPIPacing.Key(endpoint, environment), method: method,
            url: endpoints.baseURL(for: environment) + path, body: body, bundleId: bundleId, deadline: deadline)
        attempt(context, retryingUnauthorized: false, callsBefore: 0, completion: completion)
    }

    /// One request through the pacer; after a 401 with a cached token, once more (`retryingUnauthorized`).
    private func attempt<Value: Decodable & Sendable>(
        _ context: CallContext, retryingUnauthorized: Bool, callsBefore: Int,
        completion: @escaping @Sendable (Answer<Value>) -> Void
    ) {
        let key = context.key
        pacer.whenAdmitted(
            key, deadline: context.deadline,
            start: { [self] waited in
                if waited { metrics?.recordPaced(key) }
                send(context, retryingUnauthorized: retryingUnauthorized, callsBefore: callsBefore, completion: completion)
            },
            refused: { [self] refusal in
                metrics?.recordRefusal(key, refusal)
                let error: ServerAPIError
                switch refusal {
                case .heldBack(let remainingMs):
                    error = ServerAPIError(
                        .rateLimited,
                        "\(key.environment.rawValue) \(key.endpoint.rawValue) is held back for \(remainingMs) ms more "
                            + "after Apple answered 429 (no request sent)",
                        environment: key.environment, httpStatus: 429, errorCode: 4_290_000,
                        retryAfterMs: remainingMs, heldBack: true)
                case .tooLate(let waitMs):
                    error = ServerAPIError(
                        .retryable,
                        "\(key.environment.rawValue) \(key.endpoint.rawValue): the next pacing slot is \(waitMs) ms "
                            + "away, after the deadline (APPLE_SERVER_API_MAX_RPS)",
                        environment: key.environment)
                }
                completion(Answer(result: .failure(error), calls: callsBefore))
            })
    }

    private func send<Value: Decodable & Sendable>(
        _ context: CallContext, retryingUnauthorized: Bool, callsBefore: Int,
        completion: @escaping @Sendable (Answer<Value>) -> Void
    ) {
        let key = context.key
        let now = DispatchTime.now().uptimeNanoseconds
        let leftMs = context.deadline.uptimeNanoseconds > now
            ? Int((context.deadline.uptimeNanoseconds - now) / 1_000_000) : 0
        guard leftMs > 0 else {
            completion(
                Answer(
                    result: .failure(
                        ServerAPIError(
                            .retryable, "\(key.environment.rawValue) \(key.endpoint.rawValue): the deadline passed "
                                + "before the request could be sent", environment: key.environment)),
                    calls: callsBefore))
            return
        }
        let token: AppStoreServerAPIToken
        do {
            token = try tokens.token(bundleId: context.bundleId)
        } catch {
            completion(
                Answer(
                    result: .failure(
                        ServerAPIError(
                            .invalidRequest,
                            "cannot sign the App Store Server API token: \(error.message); check "
                                + "APPLE_PRIVATE_KEY_FILE", environment: key.environment)),
                    calls: callsBefore))
            return
        }
        var headers = ["Authorization: " + token.authorizationHeader, "Accept: application/json"]
        if context.method != .get { headers.append("Content-Type: application/json") }
        let request = HTTPClientRequest(
            method: context.method, url: context.url, body: context.body, headers: headers,
            timeoutMs: min(requestTimeoutMs, leftMs), responseHeaders: ["Retry-After"])
        let startedAt = SystemTime.monotonicNanoseconds()
        http.send(request) { [self] result in
            let calls = callsBefore + 1
            let outcome: Result<Value, ServerAPIError> = interpret(result, key: key)
            metrics?.recordCall(key, outcome: ServerAPIMetrics.outcome(outcome.map { _ in () }), startedAt: startedAt)
            if case .failure(let error) = outcome, error.kind == .unauthorized, !retryingUnauthorized {
                // The token may have been refused for being stale or revoked: drop it and ask once more with a
                // fresh one. Only a 401 to that one means the configuration is wrong.
                tokens.invalidate(token)
                attempt(context, retryingUnauthorized: true, callsBefore: calls, completion: completion)
                return
            }
            if case .failure(let error) = outcome, error.kind == .unauthorized {
                logger.error(
                    "the App Store Server API refused a freshly signed token (401)",
                    [
                        "endpoint": .string(key.endpoint.rawValue), "environment": .string(key.environment.rawValue),
                        "bundle_id": .string(context.bundleId),
                    ])
            }
            completion(Answer(result: outcome, calls: calls, httpStatus: (try? result.get())?.status))
        }
    }

    /// Classifies one HTTP exchange. A 429 also puts the endpoint on hold here.
    private func interpret<Value: Decodable>(
        _ result: Result<HTTPClientResponse, HTTPClientError>, key: ServerAPIPacing.Key
    ) -> Result<Value, ServerAPIError> {
        let response: HTTPClientResponse
        switch result {
        case .failure(let error):
            return .failure(
                ServerAPIError(
                    .retryable, "\(key.environment.rawValue) \(key.endpoint.rawValue): \(error)",
                    environment: key.environment))
        case .success(let value):
            response = value
        }
        let outcome: Result<Value, ServerAPIError> = Self.interpret(response, key: key, nowWallMs: wallClockMs())
        if response.status == 429, case .failure(let error) = outcome, let holdMs = error.retryAfterMs,
            pacer.holdBack(key, forMs: Int64(holdMs))
        {
            logger.warning(
                "App Store Server API rate limit (429): holding the endpoint back",
                [
                    "endpoint": .string(key.endpoint.rawValue), "environment": .string(key.environment.rawValue),
                    "hold_ms": .int(holdMs),
                    "retry_after": .string(response.header("Retry-After").map { String($0.prefix(32)) } ?? "absent"),
                ])
        }
        return outcome
    }

    /// What one answer of the App Store Server API says (pure: the caller puts the endpoint on hold after a 429 for
    /// `retryAfterMs`): the decoded body of a 2xx, else the error its status and Apple's `errorCode` classify.
    /// Messages quote at most 200 characters of Apple's `errorMessage` and nothing else of the body.
    static func interpret<Value: Decodable>(
        _ response: HTTPClientResponse, key: ServerAPIPacing.Key, nowWallMs: Int64
    ) -> Result<Value, ServerAPIError> {
        let environment = key.environment
        let prefix = "\(environment.rawValue) \(key.endpoint.rawValue)"
        switch response.status {
        case 200...299:
            if let noContent = ServerAPINoContent() as? Value { return .success(noContent) }
            do {
                return .success(try JSONDecoder().decode(Value.self, from: Data(response.body)))
            } catch {
                return .failure(
                    ServerAPIError(
                        .retryable,
                        "\(prefix): HTTP \(response.status) with a body that is not the expected JSON "
                            + "(\(response.body.count) bytes)", environment: environment, httpStatus: response.status))
            }
        case 401:
            return .failure(
                ServerAPIError(
                    .unauthorized,
                    "\(prefix): HTTP 401 with a freshly signed token: check APPLE_ISSUER_ID, APPLE_KEY_ID and "
                        + "APPLE_PRIVATE_KEY_FILE (an In-App Purchase key of the app's team), the bundle id, and "
                        + "(production) that the app has a release", environment: environment, httpStatus: 401))
        case 429:
            let holdMs = RetryAfter.holdMs(response.header("Retry-After"), nowWallMs: nowWallMs)
            return .failure(
                ServerAPIError(
                    .rateLimited,
                    "\(prefix): HTTP 429 (rate limit), held back for \(holdMs) ms; lower APPLE_SERVER_API_MAX_RPS "
                        + "if this repeats", environment: environment, httpStatus: 429, errorCode: 4_290_000,
                    retryAfterMs: Int(holdMs)))
        default:
            let body = try? JSONDecoder().decode(ServerAPIErrorBody.self, from: Data(response.body))
            let code = body?.errorCode
            let kind = ServerAPIError.kind(httpStatus: response.status, errorCode: code)
            var message = "\(prefix): HTTP \(response.status)"
            if let code { message += ", errorCode \(code)" }
            if let text = body?.errorMessage { message += " (\(text.prefix(200)))" }
            if kind == .invalidRequest {
                message += ": Apple refused our request; check the settings (APPLE_SERVER_API_URL, the bundle id) "
                    + "or report it as a bug"
            }
            return .failure(
                ServerAPIError(kind, message, environment: environment, httpStatus: response.status, errorCode: code))
        }
    }
}
