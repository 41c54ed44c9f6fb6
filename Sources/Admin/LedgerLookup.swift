import AppStore
import Foundation
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

/// The ledger's read API over the libcurl client: one purchase by its `credit_key`, retried a few times while the
/// ledger answers 503 (its database away) or cannot be reached.
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
        var pathAllowed = CharacterSet.urlPathAllowed
        pathAllowed.remove(charactersIn: "/%?#")
        let encoded = creditKey.addingPercentEncoding(withAllowedCharacters: pathAllowed) ?? creditKey
        var headers = ["Accept: application/json"]
        if let key = settings.apiKey { headers.append("Authorization: Bearer " + key) }
        let request = HTTPClientRequest(
            method: .get, url: settings.url + "/v1/purchases/" + encoded, headers: headers, timeoutMs: 10_000)
        var backoff = Backoff(initial: .milliseconds(300), maximum: .seconds(3))
        var problem = "no answer"
        for attempt in 1...attempts {
            switch await http.send(request) {
            case .success(let response):
                switch response.status {
                case 200: return Self.decode(response.body)
                case 404: return .unknown
                case 401: return .failed("the ledger refused LEDGER_API_KEY (401)")
                case 500...599: problem = "the ledger answered HTTP \(response.status)"
                default: return .failed("the ledger answered HTTP \(response.status)")
                }
            case .failure(let error):
                problem = "cannot reach the ledger at \(settings.url): \(error)"
            }
            if attempt < attempts { try? await Task.sleep(for: backoff.next()) }
        }
        return .failed(problem)
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
