import ReceiptModel

/// Why a consumed notification record becomes a DLQ record instead of an event. `message` says what failed and what
/// to do, never quoting signed data (ids and lengths only).
public struct NotificationRejection: Error, Sendable, Equatable, CustomStringConvertible {
    /// `invalid_signature` (a JWS, chain or marker check failed), `bundle_mismatch` (another app's bundle id or app
    /// Apple id), `sandbox_not_allowed` (Sandbox with `SANDBOX_POLICY=reject`, or Xcode / LocalTesting data), or
    /// `malformed_submission` (not a notification record, or a verified payload that lacks what an event needs).
    public let reason: Reason
    public let message: String
    /// Apple's `notificationUUID` when the verified payload had one (for logs).
    public let notificationUUID: String?

    public init(_ reason: Reason, _ message: String, notificationUUID: String? = nil) {
        self.reason = reason
        self.message = message
        self.notificationUUID = notificationUUID
    }

    public var description: String { "\(reason.rawValue): \(message)" }
}
