import Dispatch
import HTTPServer
import Postgres
import ReceiptModel
import ServiceRuntime
import ServiceSupport

/// The ledger's HTTP API (`GET /v1/users/{user_id}`, `GET /v1/purchases/{credit_key}`, `PUT`/`DELETE
/// /v1/users/{user_id}/consent`, `PUT /v1/users/{user_id}/app-account-token`, `GET
/// /v1/consumption-requests/{event_id}`, bearer keys from `LEDGER_API_KEYS`) and `/healthz`, `/readyz`, `/metrics` (no key). Queries run on a queue of their own, never on
/// the server's I/O threads.
struct LedgerHTTPHandler: HTTPHandler {
    let endpoints: HealthEndpoints
    let apiKeys: BearerKeys
    let database: DatabaseLink
    let queries: DispatchQueue
    /// `PUT /v1/users/{user_id}/app-account-token`.
    let declarations: TokenDeclarations

    /// Epoch milliseconds (consent times).
    let nowMs: @Sendable () -> Int64

    /// What a path asks for.
    enum Route: Equatable {
        case user(String)
        case purchase(String)
        case consent(String)
        case appAccountToken(String)
        case consumptionRequest(String)
    }

    /// The route of `path` (percent-decoded), nil when it is none of the API's; an empty argument is a route to
    /// nothing (404). A user id may hold '/', but one ending in `/consent` names that user's consent.
    static func route(_ path: String) -> Route? {
        if let rest = suffix(path, "/v1/users/") {
            if rest.hasSuffix("/consent") { return .consent(String(rest.dropLast("/consent".count))) }
            if rest.hasSuffix("/app-account-token") {
                return .appAccountToken(String(rest.dropLast("/app-account-token".count)))
            }
            return .user(rest)
        }
        if let rest = suffix(path, "/v1/purchases/") { return .purchase(rest) }
        if let rest = suffix(path, "/v1/consumption-requests/") { return .consumptionRequest(rest) }
        return nil
    }

    private static func suffix(_ path: String, _ prefix: String) -> String? {
        path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : nil
    }

    /// The methods each route takes.
    static func allowed(_ route: Route) -> [String] {
        switch route {
        case .consent: ["PUT", "DELETE"]
        case .appAccountToken: ["PUT"]
        case .user, .purchase, .consumptionRequest: ["GET", "HEAD"]
        }
    }

    func handle(_ request: HTTPRequest, respond: @escaping HTTPResponder) {
        if let response = endpoints.response(to: request) {
            respond(response)
            return
        }
        guard let route = Self.route(request.path) else {
            respond(
                Self.error(
                    404, "not_found",
                    "try /v1/users/{user_id}, /v1/users/{user_id}/consent, /v1/users/{user_id}/app-account-token, "
                        + "/v1/purchases/{credit_key} or /v1/consumption-requests/{event_id}"))
            return
        }
        let allowed = Self.allowed(route)
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
        let argument: String
        switch route {
        case .user(let value), .purchase(let value), .consent(let value), .appAccountToken(let value),
            .consumptionRequest(let value):
            argument = value
        }
        guard !argument.isEmpty else {
            respond(Self.error(404, "not_found", "the path names no user, purchase or request"))
            return
        }
        // No one can own an id with a control character (results naming one are dead-lettered), and libpq would cut
        // the text at a NUL: refused rather than read or written as another user's.
        if route == .consent(argument) || route == .user(argument) || route == .appAccountToken(argument),
            let problem = IdentifierText.problem(field: "user_id", argument)
        {
            respond(Self.error(400, "invalid_identifier", problem))
            return
        }
        let method = request.method
        let body = request.body
        queries.async {
            do throws(PostgresError) {
                switch route {
                case .user(let userId): respond(try userResponse(userId))
                case .purchase(let creditKey): respond(try purchaseResponse(creditKey))
                case .consent(let userId): respond(try consentResponse(userId, method: method))
                case .appAccountToken(let userId):
                    respond(try declarations.response(userId: userId, body: body, nowMs: nowMs()))
                case .consumptionRequest(let eventId): respond(try consumptionRequestResponse(eventId))
                }
            } catch {
                respond(
                    Self.error(
                        503, "database_unavailable", "the ledger's database did not answer; retry",
                        headers: [("Retry-After", "1")]))
            }
        }
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
        let purchases = view.purchases.map {
            #"{"credit_key":\#(JSONText.quoted($0.creditKey)),"product_id":\#(Self.string($0.productId)),"state":\#(JSONText.quoted($0.state)),"credited_at_ms":\#(Self.number($0.creditedAtMs))}"#
        }.joined(separator: ",")
        return .json(
            200,
            #"{"user_id":\#(JSONText.quoted(userId)),"balances":{\#(balances)},"entitlements":[\#(entitlements)],"purchases":[\#(purchases)],"sandbox":{"balances":{\#(Self.balances(view.sandbox.balances))},"entitlements":[\#(Self.entitlements(view.sandbox.entitlements))]}}"#
        )
    }

    private static func balances(_ balances: [(item: String, amount: Int64)]) -> String {
        balances.map { "\(JSONText.quoted($0.item)):\($0.amount)" }.joined(separator: ",")
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
            #"{"credit_key":\#(JSONText.quoted(view.creditKey)),"owner":\#(Self.string(view.owner)),"state":\#(JSONText.quoted(view.state)),"amount_credited":\#(view.amountCredited),"amount_debited":\#(view.amountDebited),"refused_claims":[\#(claims)]}"#
        )
    }

    private static func number(_ value: Int64?) -> String { value.map(String.init) ?? "null" }
    private static func string(_ value: String?) -> String { value.map(JSONText.quoted) ?? "null" }

    static func error(_ status: Int, _ code: String, _ message: String, headers: [(String, String)] = []) -> HTTPResponse {
        .json(status, #"{"error":{"code":\#(JSONText.quoted(code)),"message":\#(JSONText.quoted(message))}}"#, headers: headers)
    }
}
