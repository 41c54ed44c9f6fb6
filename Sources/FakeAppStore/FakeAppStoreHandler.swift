import Dispatch
import Foundation
import HTTPServer
import ServiceSupport
import Synchronization

/// The fake's behaviour: routes, per-receipt scenarios, latency, outage switch and counters.
///
/// Delayed answers are `asyncAfter` timers; the connection waits suspended, so no thread is held per request.
final class FakeAppStoreHandler: HTTPHandler {
    struct Latency: Sendable, Equatable {
        var fixedMs: Int
        var jitterMs: Int
    }

    private struct State {
        var latency: Latency
        var outage: FakeOutageMode?
    }

    let counters = FakeAppStoreCounters()
    let serverAPI: FakeServerAPI
    /// Signing and sending notifications (nil when their HTTP client could not be created).
    let notifications: FakeNotificationAdmin?
    private let state: Locked<State>
    /// `POST /ocsp` and `/admin/ocsp`: the signing chain's revocation status.
    private let ocsp: FakeOCSPEndpoint
    private let sharedSecret: String?
    private let logger: Logger
    private let timerQueue = DispatchQueue(label: "fake-appstore-delays", attributes: .concurrent)

    init(
        latency: Latency, sharedSecret: String?, serverAPI: FakeServerAPI, logger: Logger,
        notifications: FakeNotificationAdmin? = nil
    ) {
        self.notifications = notifications
        state = Locked(State(latency: latency, outage: nil))
        self.sharedSecret = sharedSecret
        self.serverAPI = serverAPI
        self.logger = logger
        ocsp = FakeOCSPEndpoint(signing: serverAPI.signing, logger: logger)
    }

    var latency: Latency {
        get { state.withLock { $0.latency } }
        set { state.withLock { $0.latency = newValue } }
    }

    var outage: FakeOutageMode? {
        get { state.withLock { $0.outage } }
        set { state.withLock { $0.outage = newValue } }
    }

    func handle(_ request: HTTPRequest, respond: @escaping HTTPResponder) {
        if let notifications, notifications.handle(request, respond: respond) { return }
        if ocsp.handle(request, respond: respond) { return }
        switch (request.method, request.path) {
        case ("POST", "/verifyReceipt"):
            verifyReceipt(request, sandbox: false, respond: respond)
        case ("POST", "/sandbox/verifyReceipt"):
            verifyReceipt(request, sandbox: true, respond: respond)
        case ("GET", "/admin/counters"):
            respond(countersResponse(request))
        case ("POST", "/admin/outage"):
            respond(setOutage(request))
        case ("POST", "/admin/latency"):
            respond(setLatency(request))
        case ("POST", "/admin/reset"):
            counters.reset()
            serverAPI.reset()
            outage = nil
            logger.info("counters, outage and Server API transactions reset")
            respond(.json(200, "{\"reset\":true}"))
        case ("POST", "/admin/transactions"):
            respond(registerTransactions(request))
        case ("GET", "/admin/signed-transaction"):
            respond(signedTransaction(request))
        case ("POST", "/admin/app-transactions"):
            respond(registerAppTransactions(request))
        case ("GET", "/admin/signed-app-transaction"):
            respond(signedAppTransaction(request))
        case ("POST", "/admin/notification-history"):
            respond(appendNotification(request))
        case ("GET", "/admin/server-api/counters"):
            respond(serverAPICounters(request))
        case ("GET", "/admin/consumption"):
            // The Send Consumption Information bodies received for ?transaction=ID.
            respond(.json(200, serverAPI.consumptionAnswersJSON(transactionId: request.query["transaction"] ?? "")))
        case ("POST", "/admin/notification-url"):
            // Request a Test Notification's target (App Store Connect's setting); no url clears it.
            let url = request.query["url"].flatMap { $0.isEmpty ? nil : $0 }
            serverAPI.testNotifications.url = url
            respond(.json(200, "{\"notification_url\":\(url.map(JSONText.quoted) ?? "null")}"))
        case ("GET", "/admin/signing-root"):
            respond(.text(200, serverAPI.signing.rootCertificate.pem, contentType: "application/x-pem-file"))
        case ("GET", "/healthz"):
            respond(.json(200, "{\"status\":\"ok\"}"))
        case (_, "/verifyReceipt"), (_, "/sandbox/verifyReceipt"):
            // Apple answers 21000 to anything but a POST.
            respond(FakeAppStoreResponses.status(21000, environment: nil))
        default:
            if request.path.hasPrefix("/inApps/") || request.path.hasPrefix("/sandbox/inApps/") {
                serverAPICall(request, respond: respond)
                return
            }
            respond(.json(404, "{\"error\":{\"code\":\"not_found\",\"message\":\"no such path\"}}"))
        }
    }

    // MARK: App Store Server API

    private func serverAPICall(_ request: HTTPRequest, respond: @escaping HTTPResponder) {
        let sandbox = request.path.hasPrefix("/sandbox/")
        let path = sandbox ? String(request.path.dropFirst("/sandbox".count)) : request.path
        let (latency, outage) = state.withLock { ($0.latency, $0.outage) }
        var delayMs = latency.fixedMs + (latency.jitterMs > 0 ? Int.random(in: 0...latency.jitterMs) : 0)
        let response: HTTPResponse?
        if let outage {
            switch outage {
            case .http503: response = FakeAppStoreResponses.html(503)
            case .status21005, .status21002:
                response = FakeServerAPI.error(500, 5_000_001, "An unknown retryable error occurred.")
            case .hang: response = nil
            }
        } else if let (answer, extraMs) = serverAPI.handle(request, path: path, sandbox: sandbox) {
            response = answer
            delayMs += extraMs
        } else {
            response = .json(404, "{\"error\":{\"code\":\"not_found\",\"message\":\"no such path\"}}")
        }
        guard let response else { return }  // hang: the server's response deadline eventually answers 503
        if delayMs <= 0 {
            respond(response)
        } else {
            timerQueue.asyncAfter(deadline: .now() + .milliseconds(delayMs)) { respond(response) }
        }
    }

    /// `POST /admin/transactions`: one transaction object, or an array of them.
    private func registerTransactions(_ request: HTTPRequest) -> HTTPResponse {
        switch Self.oneOrMany(FakeServerTransaction.self, in: request, code: "bad_transaction") {
        case .failure(let box): return box.response
        case .success(let transactions):
            for transaction in transactions { serverAPI.register(transaction) }
            logger.info("transactions registered", ["count": .int(transactions.count)])
            return .json(200, "{\"registered\":\(transactions.count)}")
        }
    }

    /// The body as one `T` object or an array of them; a 400 answer with `code` and the decoder's error otherwise.
    private static func oneOrMany<T: Decodable>(_: T.Type, in request: HTTPRequest, code: String)
        -> Result<[T], HTTPResponseBox>
    {
        let decoder = JSONDecoder()
        if let many = try? decoder.decode([T].self, from: Data(request.body)) { return .success(many) }
        do {
            return .success([try decoder.decode(T.self, from: Data(request.body))])
        } catch {
            return .failure(
                HTTPResponseBox(
                    .json(400, "{\"error\":{\"code\":\"\(code)\",\"message\":\(JSONText.quoted("\(error)"))}}")))
        }
    }

    /// `GET /admin/signed-transaction?id=N`: the JWS a device holds for that transaction.
    private func signedTransaction(_ request: HTTPRequest) -> HTTPResponse {
        guard let id = request.query["id"], !id.isEmpty else {
            return .json(400, "{\"error\":{\"code\":\"missing_id\",\"message\":\"id is required\"}}")
        }
        do {
            guard let jws = try serverAPI.signedTransaction(id: id) else {
                return .json(
                    404,
                    "{\"error\":{\"code\":\"unknown_transaction\",\"message\":\"not registered and not numeric\"}}")
            }
            return .json(200, "{\"transaction_id\":\(JSONText.quoted(id)),\"signed_transaction\":\(JSONText.quoted(jws))}")
        } catch {
            return .json(500, "{\"error\":{\"code\":\"signing_failed\",\"message\":\(JSONText.quoted("\(error)"))}}")
        }
    }

    /// `POST /admin/app-transactions`: one app transaction object, or an array of them.
    private func registerAppTransactions(_ request: HTTPRequest) -> HTTPResponse {
        switch Self.oneOrMany(FakeAppTransaction.self, in: request, code: "bad_app_transaction") {
        case .failure(let box): return box.response
        case .success(let appTransactions):
            for appTransaction in appTransactions { serverAPI.register(appTransaction) }
            logger.info("app transactions registered", ["count": .int(appTransactions.count)])
            return .json(200, "{\"registered\":\(appTransactions.count)}")
        }
    }

    /// `GET /admin/signed-app-transaction?id=N`: the app transaction JWS a device holds (`AppTransaction.shared`).
    private func signedAppTransaction(_ request: HTTPRequest) -> HTTPResponse {
        guard let id = request.query["id"], !id.isEmpty else {
            return .json(400, "{\"error\":{\"code\":\"missing_id\",\"message\":\"id is required\"}}")
        }
        do {
            guard let jws = try serverAPI.signedAppTransaction(id: id) else {
                return .json(
                    404,
                    "{\"error\":{\"code\":\"unknown_app_transaction\",\"message\":\"not registered and not numeric\"}}")
            }
            return .json(
                200,
                "{\"app_transaction_id\":\(JSONText.quoted(id)),\"signed_app_transaction\":\(JSONText.quoted(jws))}")
        } catch {
            return .json(500, "{\"error\":{\"code\":\"signing_failed\",\"message\":\(JSONText.quoted("\(error)"))}}")
        }
    }

    private struct NotificationEntryBody: Decodable {
        let signedPayload: String
        let environment: String?
    }

    /// `POST /admin/notification-history`: `{"signedPayload", "environment"?, "sendAttempts"?}`.
    private func appendNotification(_ request: HTTPRequest) -> HTTPResponse {
        guard let body = try? JSONDecoder().decode(NotificationEntryBody.self, from: Data(request.body)) else {
            return .json(
                400, "{\"error\":{\"code\":\"bad_entry\",\"message\":\"a JSON object with signedPayload\"}}")
        }
        var attempts: String?
        if let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any],
            let results = object["sendAttempts"], JSONSerialization.isValidJSONObject(results),
            let data = try? JSONSerialization.data(withJSONObject: results)
        {
            attempts = String(decoding: data, as: UTF8.self)
        }
        let environment = body.environment ?? "Production"
        guard environment == "Production" || environment == "Sandbox" else {
            return .json(
                400, "{\"error\":{\"code\":\"bad_environment\",\"message\":\"Production or Sandbox\"}}")
        }
        serverAPI.appendNotification(
            signedPayload: body.signedPayload, environment: environment, sendAttemptsJSON: attempts)
        return .json(200, "{\"appended\":true}")
    }

    private func serverAPICounters(_ request: HTTPRequest) -> HTTPResponse {
        if let id = request.query["app_transaction"] {
            let calls = serverAPI.appTransactionCalls(id)
            return .json(
                200,
                "{\"app_transaction\":\(JSONText.quoted(id)),\"production\":\(calls.production),"
                    + "\"sandbox\":\(calls.sandbox),\"total\":\(calls.total)}")
        }
        if let id = request.query["transaction"] {
            let calls = serverAPI.calls(transaction: id)
            let finished = [("Production", "finished_production"), ("Sandbox", "finished_sandbox")].map {
                "\"\($0.1)\":\(serverAPI.isFinished(transaction: id, environment: $0.0))"
            }.joined(separator: ",")
            return .json(
                200,
                "{\"transaction\":\(JSONText.quoted(id)),\"production\":\(calls.production),"
                    + "\"sandbox\":\(calls.sandbox),\"total\":\(calls.total),\(finished)}")
        }
        let (calls, unauthorized) = serverAPI.totals
        let endpoints = serverAPI.endpointCalls.sorted { $0.key < $1.key }
            .map { "\(JSONText.quoted($0.key)):\($0.value)" }.joined(separator: ",")
        return .json(
            200,
            "{\"production\":\(calls.production),\"sandbox\":\(calls.sandbox),\"total\":\(calls.total),"
                + "\"unauthorized\":\(unauthorized),\"endpoints\":{\(endpoints)}}")
    }

    private struct VerifyRequest: Decodable {
        let receiptData: String?
        let password: String?
        enum CodingKeys: String, CodingKey {
            case receiptData = "receipt-data"
            case password
        }
    }

    private func verifyReceipt(_ request: HTTPRequest, sandbox: Bool, respond: @escaping HTTPResponder) {
        let environment = sandbox ? "Sandbox" : "Production"
        guard let parsed = try? JSONDecoder().decode(VerifyRequest.self, from: Data(request.body)) else {
            respond(FakeAppStoreResponses.status(21000, environment: environment))
            return
        }
        guard let receiptData = parsed.receiptData, !receiptData.isEmpty else {
            respond(FakeAppStoreResponses.status(21002, environment: environment))
            return
        }
        let (scenario, key) = decodeCached(receiptData)
        let callsBefore = counters.record(receipt: key, sandbox: sandbox)
        let (latency, outage) = state.withLock { ($0.latency, $0.outage) }
        logger.debug(
            "verifyReceipt",
            [
                "receipt": .string(key), "environment": .string(environment),
                "receipt_bytes": .int(receiptData.utf8.count),
            ])

        var delayMs = latency.fixedMs + (latency.jitterMs > 0 ? Int.random(in: 0...latency.jitterMs) : 0)
        let response: HTTPResponse?
        if let outage {
            switch outage {
            case .http503: response = FakeAppStoreResponses.html(503)
            case .status21005: response = FakeAppStoreResponses.status(21005, environment: environment)
            case .status21002: response = FakeAppStoreResponses.status(21002, environment: environment)
            case .hang: response = nil
            }
        } else if let sharedSecret, parsed.password != sharedSecret {
            response = FakeAppStoreResponses.status(21004, environment: environment)
        } else if let scenario {
            delayMs += max(0, scenario.delayMs ?? 0)
            response = answer(scenario, environment: environment, sandbox: sandbox, callsBefore: callsBefore)
        } else {
            // Not a fake receipt: Apple's answer to receipt data it cannot read.
            response = FakeAppStoreResponses.status(21002, environment: environment)
        }
        guard let response else { return }  // hang: the server's response deadline eventually answers 503
        if delayMs <= 0 {
            respond(response)
        } else {
            timerQueue.asyncAfter(deadline: .now() + .milliseconds(delayMs)) { respond(response) }
        }
    }

    /// Benchmarks send the same few receipts thousands of times a second: decode each once.
    private let scenarioCache = Locked<[String: (FakeReceiptScenario?, String)]>([:])

    private func decodeCached(_ receiptData: String) -> (FakeReceiptScenario?, String) {
        if let cached = scenarioCache.withLock({ $0[receiptData] }) { return cached }
        let scenario = FakeReceipt.decode(receiptData)
        let decoded = (scenario, scenario?.id ?? FakeReceipt.counterKey(hashing: receiptData))
        scenarioCache.withLock { cache in
            if cache.count >= 1_024 { cache.removeAll(keepingCapacity: true) }
            cache[receiptData] = decoded
        }
        return decoded
    }

    private func answer(_ scenario: FakeReceiptScenario, environment: String, sandbox: Bool, callsBefore: Int)
        -> HTTPResponse?
    {
        if let failFirst = scenario.failFirst, callsBefore < failFirst {
            if let httpStatus = scenario.failHttpStatus { return FakeAppStoreResponses.html(httpStatus) }
            return FakeAppStoreResponses.status(scenario.failStatus ?? 21005, environment: environment)
        }
        switch scenario.scenario {
        case .valid:
            if scenario.isSandbox != sandbox {
                return FakeAppStoreResponses.status(sandbox ? 21008 : 21007, environment: environment)
            }
            let reported = scenario.reportedEnvironment(endpoint: environment)
            return FakeAppStoreResponses.valid(scenario, environment: reported)
        case .status:
            return FakeAppStoreResponses.status(
                scenario.status ?? 21002, environment: scenario.env ?? environment, isRetryable: scenario.isRetryable,
                hyphenated: scenario.hyphenatedRetryFlag == true)
        case .http:
            return FakeAppStoreResponses.http(scenario.httpStatus ?? 503, bodyKind: scenario.body)
        case .hang:
            return nil
        }
    }

    private func countersResponse(_ request: HTTPRequest) -> HTTPResponse {
        if let receipt = request.query["receipt"] {
            let key = counterKey(forQuery: receipt)
            let calls = counters.calls(receipt: key)
            return .json(
                200,
                "{\"receipt\":\(JSONText.quoted(key)),\"production\":\(calls.production),\"sandbox\":\(calls.sandbox),"
                    + "\"total\":\(calls.total)}")
        }
        let totals = counters.totals
        return .json(
            200,
            "{\"production\":\(totals.production),\"sandbox\":\(totals.sandbox),\"total\":\(totals.total),"
                + "\"receipts\":\(counters.receiptCount)}")
    }

    /// A counters key from what a caller passed: a fake receipt, a known key (an id), or other receipt data.
    func counterKey(forQuery value: String) -> String {
        if let scenario = FakeReceipt.decode(value) {
            return scenario.id ?? FakeReceipt.counterKey(hashing: value)
        }
        return counters.knows(value) ? value : FakeReceipt.counterKey(hashing: value)
    }

    private func setOutage(_ request: HTTPRequest) -> HTTPResponse {
        let on = ["1", "true", "on", "yes"].contains((request.query["on"] ?? "1").lowercased())
        guard on else {
            outage = nil
            logger.info("outage off")
            return .json(200, "{\"outage\":false}")
        }
        guard let mode = FakeOutageMode(rawValue: request.query["mode"] ?? "http503") else {
            let modes = FakeOutageMode.allCases.map(\.rawValue).joined(separator: ", ")
            return .json(400, "{\"error\":{\"code\":\"bad_mode\",\"message\":\"mode is one of \(modes)\"}}")
        }
        outage = mode
        logger.info("outage on", ["mode": .string(mode.rawValue)])
        return .json(200, "{\"outage\":true,\"mode\":\"\(mode.rawValue)\"}")
    }

    private func setLatency(_ request: HTTPRequest) -> HTTPResponse {
        guard let fixed = Int(request.query["fixed_ms"] ?? "0"), let jitter = Int(request.query["jitter_ms"] ?? "0"),
            fixed >= 0, jitter >= 0
        else {
            return .json(
                400,
                "{\"error\":{\"code\":\"bad_latency\",\"message\":\"fixed_ms and jitter_ms are whole milliseconds\"}}")
        }
        latency = Latency(fixedMs: fixed, jitterMs: jitter)
        logger.info("latency set", ["fixed_ms": .int(fixed), "jitter_ms": .int(jitter)])
        return .json(200, "{\"fixed_ms\":\(fixed),\"jitter_ms\":\(jitter)}")
    }
}
