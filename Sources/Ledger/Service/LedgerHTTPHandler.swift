import Dispatch
import HTTPServer
import Postgres
import ReceiptModel
import ServiceRuntime
import ServiceSupport

/// The ledger's HTTP API (`LedgerRoutes.table`: a user's balances and wallet, spends, grants and history, a purchase,
/// consent, the user's declared app account token, a refund request's audit record; bearer keys from
/// `LEDGER_API_KEYS`) and `/healthz`, `/readyz`,
/// `/metrics` (no key). Queries run on a queue of their own, spends and grants on the wallet batcher's thread, never
/// on the server's I/O threads.
struct LedgerHTTPHandler: HTTPHandler {
    let endpoints: HealthEndpoints
    let apiKeys: BearerKeys
    let database: DatabaseLink
    let queries: DispatchQueue
    /// `PUT /v1/users/{user_id}/app-account-token`.
    let declarations: TokenDeclarations
    /// Applies spends and grants (group commit).
    let wallet: WalletBatcher
    /// The item names spends and grants may name.
    let items: WalletItems
    let walletMetrics: WalletMetrics

    /// Epoch milliseconds (consent times).
    let nowMs: @Sendable () -> Int64

    /// The most a request body may hold: a spend or a grant is a few hundred bytes.
    static let maxBodyBytes = 16_384

    func admit(_ head: HTTPRequestHead) -> HTTPAdmission { .acceptBody(maxBodyBytes: Self.maxBodyBytes) }

    func handle(_ request: HTTPRequest, respond: @escaping HTTPResponder) {
        if let response = endpoints.response(to: request) {
            respond(response)
            return
        }
        let match = LedgerRoutes.match(request.rawPath)
        let allowed: [String]
        switch match {
        case .notFound:
            respond(Self.error(404, "not_found", "try \(LedgerRoutes.paths)"))
            return
        case .route(_, let methods), .invalid(let methods, _, _):
            allowed = methods
        }
        guard allowed.contains(request.method) else {
            respond(
                Self.error(
                    405, "method_not_allowed", "use \(allowed.joined(separator: ", "))",
                    headers: [("Allow", allowed.joined(separator: ", "))]))
            return
        }
        guard apiKeys.authorizes(authorizationHeader: request.header("authorization")) else {
            respond(
                Self.error(
                    401, "unauthorized", "send Authorization: Bearer <key>",
                    headers: [("WWW-Authenticate", "Bearer")]))
            return
        }
        guard case .route(let route, _) = match else {
            // No one can own an id with a control character (results naming one are dead-lettered), and libpq
            // would cut the text at a NUL: refused rather than read or written as another id.
            if case .invalid(_, let code, let message) = match { respond(Self.error(400, code, message)) }
            return
        }
        switch route {
        case .spends(let userId): submit(.spend, userId: userId, request, respond)
        case .grants(let userId): submit(.grant, userId: userId, request, respond)
        default: query(route, request, respond)
        }
    }

    /// A spend or a grant: checked here, applied by the batcher, answered when its batch committed.
    private func submit(
        _ operation: WalletRequest.Operation, userId: String, _ request: HTTPRequest, _ respond: @escaping HTTPResponder
    ) {
        let parsed = WalletRequest.parse(
            operation, userId: userId, idempotencyKey: request.header("idempotency-key"), body: request.body,
            knowsItem: items.knows)
        switch parsed {
        case .failure(let problem):
            walletMetrics.count(operation, .invalid)
            respond(Self.error(400, problem.code, problem.message))
        case .success(let walletRequest):
            wallet.submit(walletRequest) { answer in
                var headers: [(String, String)] = []
                if answer.replayed { headers.append(("Idempotent-Replayed", "true")) }
                if answer.status == 503 { headers.append(("Retry-After", "1")) }
                respond(.json(answer.status, answer.body, headers: headers))
            }
        }
    }

    private func query(_ route: LedgerRoutes.Route, _ request: HTTPRequest, _ respond: @escaping HTTPResponder) {
        var page: (limit: Int, before: Int64?) = (WalletHistory.defaultLimit, nil)
        if case .history = route {
            switch Self.historyPage(request.query) {
            case .success(let value): page = value
            case .failure(let problem):
                respond(Self.error(400, problem.code, problem.message))
                return
            }
        }
        let method = request.method
        let body = request.body
        let history = page
        queries.async {
            do throws(PostgresError) {
                switch route {
                case .user(let userId): respond(try userResponse(userId))
                case .purchase(let creditKey): respond(try purchaseResponse(creditKey))
                case .consent(let userId): respond(try consentResponse(userId, method: method))
                case .appAccountToken(let userId):
                    respond(try declarations.response(userId: userId, body: body, nowMs: nowMs()))
                case .consumptionRequest(let eventId): respond(try consumptionRequestResponse(eventId))
                case .history(let userId):
                    let json = try database.withConnection { connection throws(PostgresError) in
                        try WalletHistory.pageJSON(
                            userId: userId, limit: history.limit, before: history.before, on: connection)
                    }
                    respond(.json(200, json))
                case .spends, .grants:
                    break  // `submit`
                }
            } catch {
                respond(
                    Self.error(
                        503, "database_unavailable", "the ledger's database did not answer; retry",
                        headers: [("Retry-After", "1")]))
            }
        }
    }

    /// `limit` (1...500, default 50) and `cursor` (a `next_cursor` given before) of a history request.
    static func historyPage(_ query: [String: String]) -> Result<(limit: Int, before: Int64?), WalletRequest.Problem> {
        var limit = WalletHistory.defaultLimit
        if let text = query["limit"] {
            guard let value = Int(text), (1...WalletHistory.maxLimit).contains(value) else {
                return .failure(
                    WalletRequest.Problem(
                        code: "invalid_limit", message: "limit is a whole number from 1 to \(WalletHistory.maxLimit)"))
            }
            limit = value
        }
        var before: Int64?
        if let cursor = query["cursor"] {
            guard let seq = WalletHistory.seq(fromCursor: cursor) else {
                return .failure(
                    WalletRequest.Problem(code: "invalid_cursor", message: "cursor is a next_cursor this API gave"))
            }
            before = seq
        }
        return .success((limit, before))
    }

    /// PUT records the user's consent, DELETE its withdrawal; both answer the consent as it now is.
    private func consentResponse(_ userId: String, method: String) throws(PostgresError) -> HTTPResponse {
        let now = nowMs()
        try database.withConnection { connection throws(PostgresError) in
            try ConsumptionStore.setConsent(userId, consented: method == "PUT", nowMs: now, on: connection)
        }
        let consent = try database.withConnection { connection throws(PostgresError) in
            try ConsumptionStore.consent(userId, on: connection)
        }
        return .json(
            200,
            #"{"user_id":\#(JSONText.quoted(userId)),"consented":\#(consent?.consented ?? false),"updated_at_ms":\#(Self.number(consent?.updatedAtMs))}"#
        )
    }

    private func consumptionRequestResponse(_ eventId: String) throws(PostgresError) -> HTTPResponse {
        let audit = try database.withConnection { connection throws(PostgresError) in
            try ConsumptionStore.auditJSON(eventId, on: connection)
        }
        guard let audit else { return Self.error(404, "not_found", "the ledger has recorded no consumption request with this event_id") }
        return .json(200, audit)
    }

    private func userResponse(_ userId: String) throws(PostgresError) -> HTTPResponse {
        let view = try database.withConnection { connection throws(PostgresError) in
            try LedgerQueries.user(userId, on: connection)
        }
        let balances = Self.balances(view.balances)
        let entitlements = Self.entitlements(view.entitlements)
        let wallet = Self.wallet(view.wallet)
        let purchases = view.purchases.map {
            #"{"credit_key":\#(JSONText.quoted($0.creditKey)),"product_id":\#(Self.string($0.productId)),"state":\#(JSONText.quoted($0.state)),"credited_at_ms":\#(Self.number($0.creditedAtMs))}"#
        }.joined(separator: ",")
        return .json(
            200,
            #"{"user_id":\#(JSONText.quoted(userId)),"balances":{\#(balances)},"entitlements":[\#(entitlements)],"purchases":[\#(purchases)],"sandbox":{"balances":{\#(Self.balances(view.sandbox.balances))},"entitlements":[\#(Self.entitlements(view.sandbox.entitlements))],"wallet":{\#(Self.wallet(view.sandbox.wallet))}},"wallet":{\#(wallet)}}"#
        )
    }

    private static func balances(_ balances: [(item: String, amount: Int64)]) -> String {
        balances.map { "\(JSONText.quoted($0.item)):\($0.amount)" }.joined(separator: ",")
    }

    private static func wallet(_ wallet: [(item: String, summary: LedgerQueries.WalletSummary)]) -> String {
        wallet.map {
            #"\#(JSONText.quoted($0.item)):{"purchased":\#($0.summary.purchased),"granted":\#($0.summary.granted),"debt":\#($0.summary.debt),"unrecovered":\#($0.summary.unrecovered)}"#
        }.joined(separator: ",")
    }

    private static func entitlements(_ entitlements: [LedgerQueries.Entitlement]) -> String {
        entitlements.map {
            #"{"entitlement":\#(JSONText.quoted($0.entitlement)),"expires_date_ms":\#(Self.number($0.expiresDateMs)),"credit_key":\#(JSONText.quoted($0.creditKey))}"#
        }.joined(separator: ",")
    }

    private func purchaseResponse(_ creditKey: String) throws(PostgresError) -> HTTPResponse {
        let found = try database.withConnection { connection throws(PostgresError) in
            try LedgerQueries.purchase(creditKey, on: connection)
        }
        guard let view = found else {
            return Self.error(404, "not_found", "the ledger has never seen this credit_key")
        }
        let claims = view.refusedClaims.map {
            #"{"user_id":\#(JSONText.quoted($0.userId)),"submission_id":\#(JSONText.quoted($0.submissionId)),"at_ms":\#($0.atMs)}"#
        }.joined(separator: ",")
        return .json(
            200,
            #"{"credit_key":\#(JSONText.quoted(view.creditKey)),"owner":\#(Self.string(view.owner)),"state":\#(JSONText.quoted(view.state)),"amount_credited":\#(view.amountCredited),"amount_debited":\#(view.amountDebited),"amount_consumed":\#(view.amountConsumed),"amount_remaining":\#(view.amountRemaining),"refused_claims":[\#(claims)]}"#
        )
    }

    private static func number(_ value: Int64?) -> String { value.map(String.init) ?? "null" }
    private static func string(_ value: String?) -> String { value.map(JSONText.quoted) ?? "null" }

    static func error(_ status: Int, _ code: String, _ message: String, headers: [(String, String)] = []) -> HTTPResponse {
        .json(status, #"{"error":{"code":\#(JSONText.quoted(code)),"message":\#(JSONText.quoted(message))}}"#, headers: headers)
    }
}
