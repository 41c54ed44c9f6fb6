import AppStoreServerAPI
import Foundation
import HTTPClient
import ReceiptModel
import ServiceSupport

/// What the ledger knows of one purchase (`GET /v1/purchases/{credit_key}`).
public enum LedgerPurchase: Sendable, Equatable {
    case found(owner: String?, state: String, amountCredited: Int64, amountDebited: Int64)
    /// 404: the ledger has never seen this `credit_key`.
    case unknown
    /// The ledger did not answer usably (unreachable, 401, 5xx after retries): what happened.
    case failed(String)

    public var json: JSONValue {
        switch self {
        case .found(let owner, let state, let credited, let debited):
            .object([
                "known": .bool(true), "owner": .text(owner), "state": .string(state),
                "amount_credited": .integer(credited), "amount_debited": .integer(debited),
            ])
        case .unknown:
            .object(["known": .bool(false)])
        case .failed(let message):
            .object(["error": .string(message)])
        }
    }

    public var summary: String {
        switch self {
        case .found(let owner, let state, let credited, let debited):
            "ledger: \(state), owner \(owner ?? "none yet")"
                + (credited != 0 || debited != 0 ? " (credited \(credited), debited \(debited))" : "")
        case .unknown: "ledger: never seen"
        case .failed(let message): "ledger: unavailable (\(message))"
        }
    }
}

/// The ledger's answer to a declaration of a token's user (`PUT /v1/users/{user_id}/app-account-token`).
public enum LedgerDeclaration: Sendable, Equatable {
    /// The token is the user's (now, or since `declaredAtMs`); `resolvedClaims` waiting claims were applied.
    case declared(declaredAtMs: Int64, resolvedClaims: Int64)
    /// 409: the token is declared for another user; the ledger keeps that.
    case conflict(String)
    /// The ledger did not answer usably (unreachable, 401, 4xx, 5xx after retries): what happened.
    case failed(String)

    public var json: JSONValue {
        switch self {
        case .declared(let declaredAtMs, let resolvedClaims):
            .object(["declared_at_ms": .integer(declaredAtMs), "resolved_claims": .integer(resolvedClaims)])
        case .conflict(let message): .object(["conflict": .bool(true), "error": .string(message)])
        case .failed(let message): .object(["error": .string(message)])
        }
    }
}

/// The ledger's API over the libcurl client: one purchase by its `credit_key`, and the declaration of a token's user;
/// each retried a few times while the ledger answers 5xx (its database away) or cannot be reached (a declaration is
/// idempotent: the same PUT again changes nothing).
public struct LedgerLookup: Sendable {
    public let settings: LedgerSettings
    private let http: CurlHTTPClient
    private let attempts: Int

    public init(settings: LedgerSettings, http: CurlHTTPClient, attempts: Int = 3) {
        self.settings = settings
        self.http = http
        self.attempts = max(1, attempts)
    }

    public func purchase(creditKey: String) async -> LedgerPurchase {
        let request = HTTPClientRequest(
            method: .get, url: settings.url + "/v1/purchases/" + Self.pathSegment(creditKey), headers: headers(),
            timeoutMs: 10_000)
        switch await send(request) {
        case .success(let response):
            switch response.status {
            case 200: return Self.decode(response.body)
            case 404: return .unknown
            case 401: return .failed("the ledger refused LEDGER_API_KEY (401)")
            default: return .failed("the ledger answered HTTP \(response.status)")
            }
        case .failure(let problem): return .failed(problem.message)
        }
    }

    /// Tells the ledger that `token` (a lower-cased UUID) is `userId`'s.
    public func declare(token: String, userId: String) async -> LedgerDeclaration {
        let body = Array(#"{"app_account_token":\#(JSONText.quoted(token))}"#.utf8)
        let request = HTTPClientRequest(
            method: .put, url: settings.url + "/v1/users/" + Self.pathSegment(userId) + "/app-account-token",
            body: body, headers: headers() + ["Content-Type: application/json"], timeoutMs: 10_000)
        switch await send(request) {
        case .success(let response):
            switch response.status {
            case 200:
                guard case .object(let members)? = try? JSONParser.parse(response.body),
                    case .integer(let declaredAtMs)? = members["declared_at_ms"],
                    case .integer(let resolvedClaims)? = members["resolved_claims"]
                else { return .failed("the ledger's answer is not a declaration (schemas/ledger-openapi.yaml)") }
                return .declared(declaredAtMs: declaredAtMs, resolvedClaims: resolvedClaims)
            case 409:
                return .conflict(
                    Self.errorMessage(response.body) ?? "the token is declared for another user in the ledger")
            case 401: return .failed("the ledger refused LEDGER_API_KEY (401)")
            default:
                return .failed(
                    "the ledger answered HTTP \(response.status)"
                        + (Self.errorMessage(response.body).map { ": " + $0 } ?? ""))
            }
        case .failure(let problem): return .failed(problem.message)
        }
    }

    private struct Unanswered: Error {
        let message: String
    }

    /// `request`, sent again (with a backoff) while the ledger answers 5xx or cannot be reached; any other answer
    /// is returned as it is.
    private func send(_ request: HTTPClientRequest) async -> Result<HTTPClientResponse, Unanswered> {
        var backoff = Backoff(initial: .milliseconds(300), maximum: .seconds(3))
        var problem = "no answer"
        for attempt in 1...attempts {
            switch await http.send(request) {
            case .success(let response) where (500...599).contains(response.status):
                problem = "the ledger answered HTTP \(response.status)"
            case .success(let response):
                return .success(response)
            case .failure(let error):
                problem = "cannot reach the ledger at \(settings.url): \(error)"
            }
            if attempt < attempts { try? await Task.sleep(for: backoff.next()) }
        }
        return .failure(Unanswered(message: problem))
    }

    private func headers() -> [String] {
        var headers = ["Accept: application/json"]
        if let key = settings.apiKey { headers.append("Authorization: Bearer " + key) }
        return headers
    }

    /// `value` as one path segment: everything but the unreserved characters percent-encoded.
    static func pathSegment(_ value: String) -> String {
        var pathAllowed = CharacterSet.urlPathAllowed
        pathAllowed.remove(charactersIn: "/%?#")
        return value.addingPercentEncoding(withAllowedCharacters: pathAllowed) ?? value
    }

    /// The `error.message` of the ledger's JSON error body.
    static func errorMessage(_ body: [UInt8]) -> String? {
        guard case .object(let members)? = try? JSONParser.parse(body), case .object(let error)? = members["error"],
            case .string(let message)? = error["message"]
        else { return nil }
        return message
    }

    private struct Body: Decodable {
        let owner: String?
        let state: String
        let amountCredited: Int64?
        let amountDebited: Int64?

        enum CodingKeys: String, CodingKey {
            case owner, state
            case amountCredited = "amount_credited"
            case amountDebited = "amount_debited"
        }
    }

    static func decode(_ body: [UInt8]) -> LedgerPurchase {
        guard let decoded = try? JSONDecoder().decode(Body.self, from: Data(body)) else {
            return .failed("the ledger's answer is not a purchase (schemas/ledger-openapi.yaml)")
        }
        return .found(
            owner: decoded.owner, state: decoded.state, amountCredited: decoded.amountCredited ?? 0,
            amountDebited: decoded.amountDebited ?? 0)
    }
}
