import AppStoreServerAPI
import Crypto
import Foundation
import HTTPServer
import ServiceSupport
@_spi(Testing) import SignedData
import Synchronization

/// The fake App Store Server API: Get Transaction Info, Get Transaction History v2, Get App Transaction Info
/// (`FakeServerAPI+AppTransactions.swift`) and Get Notification History in
/// production (`/inApps/...`) and the sandbox (`/sandbox/inApps/...`), bearer tokens checked, every
/// `signedTransactionInfo` signed with the fake's signing identity. The admin side registers transactions and
/// notification history entries and hands out the signed transaction a device would hold. See `README.md`.
final class FakeServerAPI: Sendable {
    struct Calls: Sendable, Equatable {
        var production = 0
        var sandbox = 0
        var total: Int { production + sandbox }

        mutating func add(sandbox isSandbox: Bool) {
            if isSandbox { sandbox += 1 } else { production += 1 }
        }
    }

    /// One stored Get Notification History entry.
    struct NotificationEntry: Sendable {
        let signedPayload: String
        /// `[{"attemptDate": ms, "sendAttemptResult": "SUCCESS"}]` as JSON text.
        let sendAttemptsJSON: String
        let lastResult: String?
        let dateMs: Int64
        let notificationType: String?
        let subtype: String?
        let transactionIds: [String]
    }

    private struct State {
        var transactions: [String: FakeServerTransaction] = [:]
        /// Registration count per id: part of the signing cache key, so a re-registered transaction is signed anew.
        var versions: [String: Int] = [:]
        /// Calls left per scripted failure, per transaction id.
        var failuresLeft: [String: [Int]] = [:]
        var calls: [String: Calls] = [:]
        var totals = Calls()
        /// Requests per endpoint (`ServerAPIEndpoint` raw values), after the bearer token was accepted.
        var endpointCalls: [String: Int] = [:]
        var unauthorized = 0
        var notifications: [String: [NotificationEntry]] = [:]
        /// Transactions Finish Transaction was called for, by `environment|id`.
        var finished: Set<String> = []
        /// Signed answers reused for `signedReuseMs`: the JWS and Get Transaction Info's whole body.
        var signed: [String: (jws: String, infoBody: [UInt8], atMs: Int64)] = [:]
    }

    static let pageSize = 20
    /// Get Notification History entries kept per environment, the most recent (Apple keeps 180 days; the fake keeps a
    /// bounded count so that a long run's memory stays flat).
    static let notificationHistoryCapacity = FakeNotificationHistory.defaultCapacity
    /// How long a signed answer is reused for the same transaction (a benchmark asks about the same few ids
    /// thousands of times; Apple's `signedDate` is the signing time, a few seconds stale is harmless).
    static let signedReuseMs: Int64 = 10_000

    let signing: FakeSigningIdentity
    let bearer: FakeBearerVerifier
    let defaultBundleId: String
    let defaultProductId: String
    private let state = Locked(State())
    /// The Send Consumption Information bodies received, per transaction id, in order.
    let consumptionAnswers = Locked<[String: [ConsumptionAnswer]]>([:])
    /// Renewal date extensions (one and mass) and their status bookkeeping.
    let extensions = Locked(ExtensionState())
    /// Request a Test Notification: where to send it and the tokens handed out.
    let testNotifications = FakeTestNotifications()
    /// App transactions (`FakeServerAPI+AppTransactions.swift`).
    let appTransactionStore = Locked(FakeAppTransactionStore())
    let logger: Logger

    init(
        signing: FakeSigningIdentity, bearer: FakeBearerVerifier, defaultBundleId: String, defaultProductId: String,
        logger: Logger
    ) {
        self.signing = signing
        self.bearer = bearer
        self.defaultBundleId = defaultBundleId
        self.defaultProductId = defaultProductId
        self.logger = logger
    }

    // MARK: Admin

    func register(_ transaction: FakeServerTransaction) {
        state.withLock { state in
            state.transactions[transaction.id] = transaction
            state.versions[transaction.id, default: 0] += 1
            state.failuresLeft[transaction.id] = (transaction.failures ?? []).map { max(1, $0.times ?? 1) }
        }
    }

    /// Replaces what the API answers about a transaction (Apple changed it: a new token, a later renewal date),
    /// signed anew; its scripted failures go on where they were.
    func update(_ transaction: FakeServerTransaction) {
        state.withLock { state in
            if state.failuresLeft[transaction.id] == nil {
                state.failuresLeft[transaction.id] = (transaction.failures ?? []).map { max(1, $0.times ?? 1) }
            }
            state.transactions[transaction.id] = transaction
            state.versions[transaction.id, default: 0] += 1
        }
    }

    func reset() {
        state.withLock { $0 = State() }
        consumptionAnswers.withLock { $0 = [:] }
        appTransactionStore.withLock { $0 = FakeAppTransactionStore() }
        extensions.withLock { $0 = ExtensionState() }
        testNotifications.reset()
    }

    /// Every registered transaction.
    var registeredTransactions: [FakeServerTransaction] {
        state.withLock { Array($0.transactions.values) }
    }

    /// Counts a call about `id` that did not go through `transactionCall` (an order id).
    func countCall(_ id: String, sandbox: Bool) {
        state.withLock { state in
            state.calls[id, default: Calls()].add(sandbox: sandbox)
            state.totals.add(sandbox: sandbox)
        }
    }

    /// Requests per endpoint since the start (or the last reset).
    var endpointCalls: [String: Int] {
        state.withLock { $0.endpointCalls }
    }

    func calls(transaction id: String) -> Calls {
        state.withLock { $0.calls[id] ?? Calls() }
    }

    /// Whether Finish Transaction was called for `id` in `environment` (`Production` or `Sandbox`).
    func isFinished(transaction id: String, environment: String) -> Bool {
        state.withLock { $0.finished.contains("\(environment)|\(id)") }
    }

    var totals: (calls: Calls, unauthorized: Int) {
        state.withLock { ($0.totals, $0.unauthorized) }
    }

    /// The transaction `id` is (registered, or the default for a numeric id), or nil.
    func transaction(_ id: String) -> FakeServerTransaction? {
        if let registered = state.withLock({ $0.transactions[id] }) { return registered }
        guard !id.isEmpty, id.utf8.count <= 19, id.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return FakeServerTransaction.defaultTransaction(id: id, bundleId: defaultBundleId, productId: defaultProductId)
    }

    /// The signed transaction a device holds for `id` (signed now), or nil for an unknown id.
    func signedTransaction(id: String) throws -> String? {
        guard let transaction = transaction(id) else { return nil }
        return try sign(transaction, reuse: false)
    }

    /// Adds a Get Notification History entry (`environment` `Production` or `Sandbox`). The payload is read
    /// (unverified) for its type, subtype, date and transaction ids, which the endpoint filters on.
    func appendNotification(signedPayload: String, environment: String, sendAttemptsJSON: String?) {
        let payload = Self.unverifiedJSON(signedPayload)
        let data = payload?["data"] as? [String: Any]
        let transaction = (data?["signedTransactionInfo"] as? String).flatMap(Self.unverifiedJSON)
        let ids = [transaction?["transactionId"], transaction?["originalTransactionId"]].compactMap { value in
            (value as? String) ?? (value as? NSNumber).map { $0.stringValue }
        }
        let nowMs = SystemTime.wallMilliseconds()
        let dateMs = (payload?["signedDate"] as? NSNumber)?.int64Value ?? nowMs
        let attempts = sendAttemptsJSON ?? "[{\"attemptDate\":\(nowMs),\"sendAttemptResult\":\"SUCCESS\"}]"
        let lastResult = (try? JSONSerialization.jsonObject(with: Data(attempts.utf8)) as? [[String: Any]])?.last?[
            "sendAttemptResult"] as? String
        let entry = NotificationEntry(
            signedPayload: signedPayload, sendAttemptsJSON: attempts, lastResult: lastResult, dateMs: dateMs,
            notificationType: payload?["notificationType"] as? String, subtype: payload?["subtype"] as? String,
            transactionIds: ids)
        state.withLock { state in
            state.notifications[environment, default: []].append(entry)
            state.notifications[environment]?.removeOldest(keeping: Self.notificationHistoryCapacity)
        }
    }

    /// Replaces the send attempts of the entry holding `signedPayload` (a notification the fake is still retrying).
    func updateNotificationAttempts(signedPayload: String, sendAttemptsJSON: String) {
        let lastResult = (try? JSONSerialization.jsonObject(with: Data(sendAttemptsJSON.utf8)) as? [[String: Any]])?
            .last?["sendAttemptResult"] as? String
        state.withLock { state in
            for (environment, entries) in state.notifications {
                guard let index = entries.lastIndex(where: { $0.signedPayload == signedPayload }) else { continue }
                let old = entries[index]
                state.notifications[environment]?[index] = NotificationEntry(
                    signedPayload: old.signedPayload, sendAttemptsJSON: sendAttemptsJSON,
                    lastResult: lastResult, dateMs: old.dateMs, notificationType: old.notificationType,
                    subtype: old.subtype, transactionIds: old.transactionIds)
            }
        }
    }

    // MARK: API

    /// Answers an API request (`path` without the `/sandbox` prefix); nil for a path that is not the API's.
    func handle(_ request: HTTPRequest, path: String, sandbox: Bool) -> (HTTPResponse, delayMs: Int)? {
        let environment = sandbox ? "Sandbox" : "Production"
        let route: Route
        if request.method == "GET", let id = Self.suffix(path, after: "/inApps/v1/transactions/appTransactions/") {
            route = .appTransactionInfo(id)
        } else if request.method == "GET", let id = Self.suffix(path, after: "/inApps/v1/transactions/") {
            route = .transactionInfo(id)
        } else if request.method == "GET", let id = Self.suffix(path, after: "/inApps/v2/history/") {
            route = .history(id)
        } else if request.method == "POST", path == "/inApps/v1/notifications/history" {
            route = .notificationHistory
        } else if request.method == "GET", let id = Self.suffix(path, after: "/inApps/v2/refund/lookup/") {
            route = .refundHistory(id)
        } else if request.method == "PUT", let id = Self.suffix(path, after: "/inApps/v2/transactions/consumption/") {
            route = .consumptionInformation(id)
        } else if let admin = Self.adminRoute(method: request.method, path: path) {
            route = admin
        } else if path.hasPrefix("/inApps/") {
            return (Self.error(404, 4_040_000, "no such endpoint in the fake"), 0)
        } else {
            return nil
        }
        let bundleId: String
        switch bearer.check(authorization: request.headers["authorization"]) {
        case .success(let bid): bundleId = bid
        case .failure(let refusal):
            state.withLock { $0.unauthorized += 1 }
            logger.info("Server API 401", ["reason": .string(refusal.reason), "environment": .string(environment)])
            return (Self.unauthorized, 0)
        }
        state.withLock { $0.endpointCalls[route.endpoint.rawValue, default: 0] += 1 }
        switch route {
        case .transactionInfo(let id), .history(let id), .refundHistory(let id), .consumptionInformation(let id),
            .subscriptionStatuses(let id), .setAppAccountToken(let id), .finishTransaction(let id):
            return transactionCall(route, id: id, bundleId: bundleId, environment: environment, request: request)
        case .extendRenewal(let id):
            // Apple names the original transaction here: its own codes for a bad or unknown one.
            return transactionCall(
                route, id: id, bundleId: bundleId, environment: environment, request: request,
                invalid: (4_000_008, "Invalid original transaction id."),
                notFound: (4_040_005, "Original transaction id not found."))
        case .notificationHistory:
            return (notificationHistory(request, environment: environment), 0)
        case .orderLookup(let id):
            return (orderLookup(id.removingPercentEncoding ?? id, bundleId: bundleId, environment: environment), 0)
        case .massExtend:
            return (massExtend(body: request.body, bundleId: bundleId, environment: environment), 0)
        case .massExtendStatus(let productId, let requestIdentifier):
            return (
                massExtendStatus(
                    productId: productId.removingPercentEncoding ?? productId,
                    requestIdentifier: requestIdentifier.removingPercentEncoding ?? requestIdentifier,
                    environment: environment), 0)
        case .requestTestNotification:
            return (testNotifications.request(bundleId: bundleId, environment: environment), 0)
        case .testNotificationStatus(let token):
            return (testNotifications.status(token: token.removingPercentEncoding ?? token), 0)
        case .appTransactionInfo(let id):
            return appTransactionInfo(id: id, bundleId: bundleId, environment: environment)
        }
    }

    enum Route {
        case appTransactionInfo(String)
        case transactionInfo(String)
        case history(String)
        case refundHistory(String)
        case consumptionInformation(String)
        case notificationHistory
        case orderLookup(String)
        case subscriptionStatuses(String)
        case setAppAccountToken(String)
        case finishTransaction(String)
        case extendRenewal(String)
        case massExtend
        case massExtendStatus(productId: String, requestIdentifier: String)
        case requestTestNotification
        case testNotificationStatus(String)

        /// The endpoint it is, as the client's pacing names them.
        var endpoint: ServerAPIEndpoint {
            switch self {
            case .transactionInfo: .transactionInfo
            case .history: .transactionHistory
            case .refundHistory: .refundHistory
            case .consumptionInformation: .consumptionInformation
            case .notificationHistory: .notificationHistory
            case .orderLookup: .orderLookup
            case .subscriptionStatuses: .subscriptionStatuses
            case .setAppAccountToken: .setAppAccountToken
            case .finishTransaction: .finishTransaction
            case .extendRenewal, .massExtend, .massExtendStatus: .extendRenewal
            case .requestTestNotification, .testNotificationStatus: .testNotification
            case .appTransactionInfo: .appTransactionInfo
            }
        }
    }

    private func transactionCall(
        _ route: Route, id rawId: String, bundleId: String, environment: String, request: HTTPRequest,
        invalid: (code: Int, message: String) = (4_000_006, "Invalid transaction id."),
        notFound: (code: Int, message: String) = (4_040_010, "Transaction id not found.")
    ) -> (HTTPResponse, delayMs: Int) {
        let id = rawId.removingPercentEncoding ?? rawId
        let sandbox = environment == "Sandbox"
        guard let transaction = transaction(id) else {
            return (Self.error(400, invalid.code, invalid.message), 0)
        }
        let failure = state.withLock { state -> FakeServerTransaction.Failure? in
            state.calls[id, default: Calls()].add(sandbox: sandbox)
            state.totals.add(sandbox: sandbox)
            guard var left = state.failuresLeft[id], let failures = state.transactions[id]?.failures else { return nil }
            for (index, step) in failures.enumerated() where index < left.count && left[index] > 0 {
                if let only = step.environment, only.caseInsensitiveCompare(environment) != .orderedSame { continue }
                left[index] -= 1
                state.failuresLeft[id] = left
                return step
            }
            return nil
        }
        let delayMs = max(0, transaction.delayMs ?? 0)
        if let failure {
            return (Self.failureResponse(failure), delayMs)
        }
        if transaction.productionUnauthorized == true, !sandbox {
            return (Self.unauthorized, delayMs)
        }
        guard transaction.resolvedEnvironment.caseInsensitiveCompare(environment) == .orderedSame,
            (transaction.bundleId ?? defaultBundleId) == bundleId
        else {
            return (Self.error(404, notFound.code, notFound.message), delayMs)
        }
        do {
            switch route {
            case .transactionInfo:
                return (
                    HTTPResponse(
                        status: 200, headers: [("Content-Type", "application/json")],
                        body: try signedAnswer(transaction).infoBody), delayMs)
            case .history:
                return (try history(of: transaction, bundleId: bundleId, environment: environment, query: request.query),
                        delayMs)
            case .consumptionInformation:
                return (consumptionInformation(for: transaction, body: request.body), delayMs)
            case .refundHistory:
                return (
                    try refundHistory(
                        of: transaction, bundleId: bundleId, environment: environment, query: request.query),
                    delayMs)
            case .subscriptionStatuses:
                return (
                    try subscriptionStatuses(
                        of: transaction, bundleId: bundleId, environment: environment, query: request.query),
                    delayMs)
            case .setAppAccountToken:
                return (setAppAccountToken(transaction, id: id, body: request.body), delayMs)
            case .finishTransaction:
                // Apple: 200 with no body; the transaction is finished (again, when it was: nothing changes).
                _ = state.withLock { $0.finished.insert("\(environment)|\(id)") }
                return (HTTPResponse(status: 200, headers: [], body: []), delayMs)
            case .extendRenewal:
                return (
                    extendRenewal(
                        transaction, id: id, body: request.body, bundleId: bundleId, environment: environment),
                    delayMs)
            case .notificationHistory, .orderLookup, .massExtend, .massExtendStatus, .requestTestNotification,
                .testNotificationStatus, .appTransactionInfo:
                return (Self.error(404, 4_040_000, "no such endpoint"), delayMs)
            }
        } catch {
            logger.error("cannot sign a transaction", ["transaction": .string(id), "error": .string("\(error)")])
            return (Self.error(500, 5_000_000, "An unknown error occurred."), delayMs)
        }
    }

    /// Every transaction of `transaction`'s customer in its environment and app, one page of 20.
    private func history(
        of transaction: FakeServerTransaction, bundleId: String, environment: String, query: [String: String]
    ) throws -> HTTPResponse {
        var group = customerGroup(of: transaction, bundleId: bundleId, environment: environment)
        if let product = query["productId"] { group = group.filter { ($0.productId ?? defaultProductId) == product } }
        let descending = query["sort"] == "DESCENDING"
        group.sort { left, right in
            let (l, r) = (left.purchaseDateMs ?? FakeServerTransaction.defaultPurchaseDateMs,
                          right.purchaseDateMs ?? FakeServerTransaction.defaultPurchaseDateMs)
            if l != r { return descending ? l > r : l < r }
            return descending ? left.id > right.id : left.id < right.id
        }
        var offset = 0
        if let revision = query["revision"] {
            guard revision.hasPrefix("r"), let value = Int(revision.dropFirst()), value >= 0 else {
                return Self.error(400, 4_000_005, "Invalid request revision.")
            }
            offset = value
        }
        let page = group.dropFirst(offset).prefix(Self.pageSize)
        let next = offset + page.count
        let hasMore = next < group.count
        // A JWS is base64url and dots: nothing in it needs escaping in JSON.
        let signed = try page.map { "\"" + (try signedAnswer($0).jws) + "\"" }
        return .json(
            200,
            "{\"revision\":\"r\(next)\",\"hasMore\":\(hasMore),\"bundleId\":\(JSONText.quoted(bundleId)),"
                + "\"appAppleId\":\(FakeAppTransaction.defaultAppAppleId),\"environment\":\(JSONText.quoted(environment)),"
                + "\"signedTransactions\":[\(signed.joined(separator: ","))]}")
    }

    /// Every transaction of `transaction`'s customer in this app and environment (itself included): what its
    /// history and refund history answer from.
    func customerGroup(
        of transaction: FakeServerTransaction, bundleId: String, environment: String
    ) -> [FakeServerTransaction] {
        let customer = transaction.resolvedCustomer
        var group = state.withLock { state in
            state.transactions.values.filter {
                $0.resolvedCustomer == customer
                    && $0.resolvedEnvironment.caseInsensitiveCompare(environment) == .orderedSame
                    && ($0.bundleId ?? defaultBundleId) == bundleId
            }
        }
        if !group.contains(where: { $0.id == transaction.id }) { group.append(transaction) }
        return group
    }

    private struct NotificationHistoryBody: Decodable {
        let startDate: Int64?
        let endDate: Int64?
        let notificationType: String?
        let notificationSubtype: String?
        let onlyFailures: Bool?
        let transactionId: String?
    }

    private func notificationHistory(_ request: HTTPRequest, environment: String) -> HTTPResponse {
        guard let body = try? JSONDecoder().decode(NotificationHistoryBody.self, from: Data(request.body)),
            let start = body.startDate, let end = body.endDate
        else {
            return Self.error(400, 4_000_000, "startDate and endDate are required.")
        }
        guard start <= end else { return Self.error(400, 4_000_013, "Start date is after end date.") }
        if body.transactionId != nil, body.notificationType != nil {
            return Self.error(400, 4_000_000, "transactionId and notificationType exclude each other.")
        }
        var offset = 0
        if let token = request.query["paginationToken"] {
            guard token.hasPrefix("n"), let value = Int(token.dropFirst()), value >= 0 else {
                return Self.error(400, 4_000_014, "Invalid pagination token.")
            }
            offset = value
        }
        let entries = state.withLock { $0.notifications[environment] ?? [] }.filter { entry in
            entry.dateMs >= start && entry.dateMs < end
                && (body.notificationType == nil || entry.notificationType == body.notificationType)
                && (body.notificationSubtype == nil || entry.subtype == body.notificationSubtype)
                && (body.onlyFailures != true || entry.lastResult != "SUCCESS")
                && (body.transactionId.map { entry.transactionIds.contains($0) } ?? true)
        }
        let page = entries.dropFirst(offset).prefix(Self.pageSize)
        let next = offset + page.count
        let hasMore = next < entries.count
        let items = page.map {
            "{\"signedPayload\":\(JSONText.quoted($0.signedPayload)),\"sendAttempts\":\($0.sendAttemptsJSON)}"
        }
        return .json(
            200,
            // Apple: "All responses include a paginationToken" (its paginationToken page), the last page's too.
            "{\"notificationHistory\":[\(items.joined(separator: ","))],\"hasMore\":\(hasMore),"
                + "\"paginationToken\":\"n\(next)\"}")
    }

    // MARK: Signing and responses

    /// The transaction signed now, for a device (`GET /admin/signed-transaction`): never reused.
    private func sign(_ transaction: FakeServerTransaction, reuse: Bool) throws -> String {
        if reuse { return try signedAnswer(transaction).jws }
        let payload = transaction.payloadJSON(
            bundleId: defaultBundleId, productId: defaultProductId, signedDateMs: SystemTime.wallMilliseconds())
        return try signing.signer.sign(payload: Array(payload.utf8))
    }

    /// The API's signed answer about `transaction`, reused for `signedReuseMs` (a re-registration signs anew): its
    /// JWS, and Get Transaction Info's body built once, so a benchmark's repeated calls cost neither a signature nor
    /// a 4 KB JSON rewrite.
    func signedAnswer(_ transaction: FakeServerTransaction) throws -> (jws: String, infoBody: [UInt8]) {
        let nowMs = SystemTime.wallMilliseconds()
        let version = state.withLock { $0.versions[transaction.id] ?? 0 }
        let key = "\(transaction.resolvedEnvironment)|\(transaction.id)|\(version)"
        if let cached = state.withLock({ $0.signed[key] }), nowMs - cached.atMs < Self.signedReuseMs {
            return (cached.jws, cached.infoBody)
        }
        let payload = transaction.payloadJSON(bundleId: defaultBundleId, productId: defaultProductId, signedDateMs: nowMs)
        let jws = try signing.signer.sign(payload: Array(payload.utf8))
        let body = Array("{\"signedTransactionInfo\":\"\(jws)\"}".utf8)
        state.withLock { state in
            if state.signed.count >= 50_000 { state.signed.removeAll(keepingCapacity: true) }
            state.signed[key] = (jws, body, nowMs)
        }
        return (jws, body)
    }

    /// Apple's 401 carries no JSON body.
    static let unauthorized = HTTPResponse.text(401, "Unauthenticated\n")

    static func error(_ status: Int, _ code: Int, _ message: String, headers: [(String, String)] = []) -> HTTPResponse {
        .json(status, "{\"errorCode\":\(code),\"errorMessage\":\(JSONText.quoted(message))}", headers: headers)
    }

    static func failureResponse(_ failure: FakeServerTransaction.Failure) -> HTTPResponse {
        if failure.httpStatus == 401 { return unauthorized }
        var headers: [(String, String)] = []
        if let retryAfter = failure.retryAfter { headers.append(("Retry-After", retryAfter)) }
        if let code = failure.errorCode {
            return error(failure.httpStatus, code, "Scripted failure.", headers: headers)
        }
        if failure.httpStatus == 429 { return error(429, 4_290_000, "Rate limit exceeded.", headers: headers) }
        var response = FakeAppStoreResponses.html(failure.httpStatus)
        response.headers += headers
        return response
    }

    private static func suffix(_ path: String, after prefix: String) -> String? {
        guard path.hasPrefix(prefix) else { return nil }
        let rest = String(path.dropFirst(prefix.count))
        return rest.isEmpty || rest.contains("/") ? nil : rest
    }

    /// The payload of a JWS as a JSON object, NOT verified (the fake's own filters only).
    static func unverifiedJSON(_ jws: String) -> [String: Any]? {
        guard let payload = try? CompactJWS.unverifiedPayload(jws) else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any]
    }
}

extension FakeServerAPI {
    /// The routes of the support and operations endpoints (`FakeServerAPI+Admin.swift`,
    /// `FakeServerAPI+Extensions.swift`, `FakeTestNotifications`), nil for any other path.
    static func adminRoute(method: String, path: String) -> Route? {
        switch method {
        case "GET":
            if let id = suffix(path, after: "/inApps/v1/lookup/") { return .orderLookup(id) }
            if path.hasPrefix("/inApps/v1/subscriptions/extend/mass/") {
                let parts = path.dropFirst("/inApps/v1/subscriptions/extend/mass/".count)
                    .split(separator: "/", omittingEmptySubsequences: false)
                guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
                return .massExtendStatus(productId: String(parts[0]), requestIdentifier: String(parts[1]))
            }
            if let id = suffix(path, after: "/inApps/v1/subscriptions/") { return .subscriptionStatuses(id) }
            if let token = suffix(path, after: "/inApps/v1/notifications/test/") {
                return .testNotificationStatus(token)
            }
        case "PUT":
            if let id = suffix(path, after: "/inApps/v1/subscriptions/extend/") { return .extendRenewal(id) }
            let tokenSuffix = "/appAccountToken"
            if path.hasSuffix(tokenSuffix),
                let id = suffix(String(path.dropLast(tokenSuffix.count)), after: "/inApps/v1/transactions/")
            {
                return .setAppAccountToken(id)
            }
        case "POST":
            if path == "/inApps/v1/subscriptions/extend/mass" { return .massExtend }
            let finishSuffix = "/finish"
            if path.hasSuffix(finishSuffix),
                let id = suffix(String(path.dropLast(finishSuffix.count)), after: "/inApps/v1/transactions/")
            {
                return .finishTransaction(id)
            }
            if path == "/inApps/v1/notifications/test" { return .requestTestNotification }
        default:
            break
        }
        return nil
    }
}
