import AppStoreServerAPI

/// What `receipt-admin` exits with, for scripts.
public enum AdminExitCode: Int32, Sendable, Equatable, CaseIterable {
    /// Apple answered and the command did what it says.
    case ok = 0
    /// Apple said not found (4040010, 4040005, an order id it does not know, an unknown status request or test
    /// notification), nothing matched (no subscription, no refund), or the test notification was not delivered.
    case notFound = 1
    /// Bad usage or settings: nothing was sent.
    case usage = 2
    /// Apple refused the request (a 4xx other than not found: an invalid id, an ineligible subscription, 401).
    case refused = 3
    /// Apple (or the ledger) was unavailable: 429, 5xx or timeouts until the deadline.
    case unavailable = 4
    /// Apple's answer did not verify: a signature, chain, bundle id or environment that is not this app's.
    case unverified = 5

    /// The name JSON output carries (`outcome`).
    public var outcome: String {
        switch self {
        case .ok: "ok"
        case .notFound: "not_found"
        case .usage: "usage"
        case .refused: "refused"
        case .unavailable: "unavailable"
        case .unverified: "unverified"
        }
    }

    /// Apple's error codes that mean "no such thing" although the client classifies them as refusals:
    /// 4040008 TestNotificationNotFound, 4040009 StatusRequestNotFound.
    static let notFoundCodes: Set<Int> = [4_040_008, 4_040_009]

    /// The exit code of a call that failed with `error` (after every retry).
    public static func of(_ error: ServerAPIError) -> AdminExitCode {
        if let code = error.errorCode, notFoundCodes.contains(code) { return .notFound }
        switch error.kind {
        case .notFound: return .notFound
        case .invalidTransactionId, .invalidRequest, .unauthorized: return .refused
        case .rateLimited, .retryable: return .unavailable
        }
    }
}
