import Dispatch
import HTTPServer
import Postgres
import ServiceRuntime
import ServiceSupport

/// The ledger's HTTP API (`GET /v1/users/{user_id}`, `GET /v1/purchases/{credit_key}`, bearer keys from
/// `LEDGER_API_KEYS`) and `/healthz`, `/readyz`, `/metrics` (no key). Queries run on a queue of their own, never on
/// the server's I/O threads.
struct LedgerHTTPHandler: HTTPHandler {
    let endpoints: HealthEndpoints
    let apiKeys: BearerKeys
    let database: DatabaseLink
    let queries: DispatchQueue

    func handle(_ request: HTTPRequest, respond: @escaping HTTPResponder) {
        guard request.method == "GET" || request.method == "HEAD" else {
            respond(Self.error(405, "method_not_allowed", "use GET", headers: [("Allow", "GET")]))
            return
        }
        if let response = endpoints.response(to: request) {
            respond(response)
            return
        }
        let usersPrefix = "/v1/users/"
        let purchasesPrefix = "/v1/purchases/"
        let isUser: Bool
        let argument: String
        if request.path.hasPrefix(usersPrefix) {
            argument = String(request.path.dropFirst(usersPrefix.count))
            isUser = true
        } else if request.path.hasPrefix(purchasesPrefix) {
            argument = String(request.path.dropFirst(purchasesPrefix.count))
            isUser = false
        } else {
            respond(Self.error(404, "not_found", "try /v1/users/{user_id} or /v1/purchases/{credit_key}"))
            return
        }
        guard apiKeys.authorizes(authorizationHeader: request.header("authorization")) else {
            respond(
                Self.error(
                    401, "unauthorized", "send Authorization: Bearer <key>",
                    headers: [("WWW-Authenticate", "Bearer")]))
            return
        }
        guard !argument.isEmpty else {
            respond(Self.error(404, "not_found", "the path names no user or purchase"))
            return
        }
        queries.async {
            do throws(PostgresError) {
                respond(isUser ? try userResponse(argument) : try purchaseResponse(argument))
            } catch {
                respond(
                    Self.error(
                        503, "database_unavailable", "the ledger's database did not answer; retry",
                        headers: [("Retry-After", "1")]))
            }
        }
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
