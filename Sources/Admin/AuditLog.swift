import AppStoreServerAPI
import Foundation
import HTTPClient
import ReceiptModel
import ServiceSupport

/// One App Store Server API attempt, as the audit line says it: which endpoint, in which environment, the attempt
/// number, Apple's HTTP status and error code, how long it took and whether it is retried. Never a token, an id, a
/// request body or signed data.
public struct AuditEntry: Sendable, Equatable {
    public var endpoint: ServerAPIEndpoint
    public var method: HTTPMethod
    public var environment: AppStoreEnvironment
    public var attempt: Int
    public var httpStatus: Int?
    public var errorCode: Int?
    /// `ok`, `not_found`, `invalid_transaction_id`, `unauthorized`, `rate_limited`, `held_back`, `retryable`,
    /// `refused`.
    public var outcome: String
    public var durationMs: Int
    /// Set when the call is tried again after this many milliseconds.
    public var retryInMs: Int?

    static func outcome(of error: ServerAPIError) -> String {
        switch error.kind {
        case .notFound: "not_found"
        case .invalidTransactionId: "invalid_transaction_id"
        case .unauthorized: "unauthorized"
        case .rateLimited: error.heldBack ? "held_back" : "rate_limited"
        case .retryable: "retryable"
        case .invalidRequest: "refused"
        }
    }

    /// The audit line: one JSON object.
    public var line: String {
        JSONValue.object([
            "audit": .string("app_store_server_api"), "endpoint": .string(endpoint.rawValue),
            "method": .string(method.rawValue), "environment": .string(environment.rawValue),
            "attempt": .integer(Int64(attempt)), "http_status": .int(httpStatus), "error_code": .int(errorCode),
            "outcome": .string(outcome), "duration_ms": .integer(Int64(durationMs)),
            "retry_in_ms": .int(retryInMs),
        ]).line
    }
}

/// Where audit lines go: stderr in the tool, a list in tests.
public struct AuditLog: Sendable {
    private let write: @Sendable (String) -> Void

    public init(write: @escaping @Sendable (String) -> Void) {
        self.write = write
    }

    /// Lines to the process's stderr, unbuffered.
    public static let standardError = AuditLog { line in FileHandle.standardError.write(Data((line + "\n").utf8)) }

    public func record(_ entry: AuditEntry) {
        write(entry.line)
    }
}
