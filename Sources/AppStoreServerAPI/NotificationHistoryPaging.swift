/// One page of Get Notification History, as the backfill and the reconciliation sweep need it.
public struct NotificationHistoryPage: Sendable, Equatable {
    /// Apple's `signedPayload`s, unverified (the verifier verifies them like any notification).
    public var signedPayloads: [String]
    public var hasMore: Bool
    /// Pass it back for the next page.
    public var paginationToken: String?
    /// App Store Server API requests this page took (its retries included): what a call budget counts.
    public var calls: Int

    public init(signedPayloads: [String], hasMore: Bool, paginationToken: String?, calls: Int = 1) {
        self.signedPayloads = signedPayloads
        self.hasMore = hasMore
        self.paginationToken = paginationToken
        self.calls = calls
    }
}

/// Where the backfill and the reconciliation sweep read notifications from: the App Store Server API's Get
/// Notification History in production (`ServerAPIHistory`), a fake in tests.
public protocol NotificationHistoryPaging: Sendable {
    /// The page after `paginationToken` (nil: the first) of the notifications signed in `[startMs, endMs)`.
    /// - Returns: the page, or why there is none (a message for the operator).
    func page(startMs: Int64, endMs: Int64, onlyFailures: Bool, paginationToken: String?) async
        -> Result<NotificationHistoryPage, NotificationHistoryError>
}

/// Why Get Notification History gave no page (the backfill and the sweep stop there).
public struct NotificationHistoryError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    /// App Store Server API requests made before giving up (what a call budget counts).
    public var calls: Int

    public init(_ description: String, calls: Int = 0) {
        self.description = description
        self.calls = calls
    }
}
