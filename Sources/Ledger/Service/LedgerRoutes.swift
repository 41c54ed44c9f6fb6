import HTTPServer
import ReceiptModel

/// The ledger API's routes: one table, matched on the path as the client sent it, split at `/` before any segment
/// is percent-decoded (so `a%2Fconsent` is a user id, not the consent route), each parameter decoded on its own and
/// refused when it holds a control character (a NUL would cut it short in libpq: `key%00junk` is not `key`).
/// Adding a route is one line of `table`.
enum LedgerRoutes {
    /// What a path asks for, with its decoded parameter.
    enum Route: Equatable, Sendable {
        case user(String)
        case consent(String)
        case appAccountToken(String)
        case spends(String)
        case grants(String)
        case history(String)
        case purchase(String)
        case consumptionRequest(String)
    }

    struct Pattern: Sendable {
        /// The path's segments after the leading `/`; `{name}` is the parameter.
        let segments: [Substring]
        let parameterName: String
        let methods: [String]
        let route: @Sendable (String) -> Route

        init(_ path: String, _ methods: [String], _ route: @escaping @Sendable (String) -> Route) {
            segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { $0 }
            parameterName = segments.first { $0.hasPrefix("{") }.map { String($0.dropFirst().dropLast()) } ?? ""
            self.methods = methods
            self.route = route
        }

        var template: String { "/" + segments.joined(separator: "/") }
    }

    static let read = ["GET", "HEAD"]

    static let table: [Pattern] = [
        Pattern("/v1/users/{user_id}", read, Route.user),
        Pattern("/v1/users/{user_id}/consent", ["PUT", "DELETE"], Route.consent),
        Pattern("/v1/users/{user_id}/app-account-token", ["PUT"], Route.appAccountToken),
        Pattern("/v1/users/{user_id}/spends", ["POST"], Route.spends),
        Pattern("/v1/users/{user_id}/grants", ["POST"], Route.grants),
        Pattern("/v1/users/{user_id}/history", read, Route.history),
        Pattern("/v1/purchases/{credit_key}", read, Route.purchase),
        Pattern("/v1/consumption-requests/{event_id}", read, Route.consumptionRequest),
    ]

    /// How a path matched.
    enum Match: Equatable, Sendable {
        /// A route, and the methods it takes.
        case route(Route, methods: [String])
        /// A route's path whose parameter cannot name anything: `code` and a message for a 400 (after the method
        /// and the key are checked).
        case invalid(methods: [String], code: String, message: String)
        /// None of the API's paths, or a parameter that is empty (404).
        case notFound
    }

    /// The route of `rawPath` (the path as sent, percent-encoding kept).
    static func match(_ rawPath: String) -> Match {
        let segments = rawPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for pattern in table where pattern.segments.count == segments.count {
            var parameter: Substring?
            var matches = true
            for (expected, actual) in zip(pattern.segments, segments) {
                if expected.hasPrefix("{") {
                    parameter = actual
                } else if expected != actual {
                    matches = false
                    break
                }
            }
            guard matches, let parameter else { continue }
            guard !parameter.isEmpty else { return .notFound }
            guard let decoded = PercentEncoding.decodeStrictly(parameter) else {
                return .invalid(
                    methods: pattern.methods, code: "invalid_identifier",
                    message: "\(pattern.parameterName) is not valid percent-encoded UTF-8")
            }
            if let problem = IdentifierText.problem(field: pattern.parameterName, decoded) {
                return .invalid(methods: pattern.methods, code: "invalid_identifier", message: problem)
            }
            return .route(pattern.route(decoded), methods: pattern.methods)
        }
        return .notFound
    }

    /// The paths the API serves, for a 404's message.
    static var paths: String { table.map(\.template).joined(separator: ", ") }
}
