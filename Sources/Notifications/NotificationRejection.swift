import ReceiptModel
import SignedData

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
    /// True when the notification was not judged at all (the revocation status of its signing chain was
    /// unavailable): no DLQ record, the verifier holds it and verifies it again later (`reason` is
    /// `apple_unavailable`).
    public let isRetryable: Bool

    public init(_ reason: Reason, _ message: String, notificationUUID: String? = nil) {
        self.reason = reason
        self.message = message
        self.notificationUUID = notificationUUID
        isRetryable = false
    }

    private init(retryLater message: String, notificationUUID: String?) {
        reason = .appleUnavailable
        self.message = message
        self.notificationUUID = notificationUUID
        isRetryable = true
    }

    /// A JWS of the notification could not be judged now: verify it again later, never a DLQ record.
    public static func retryLater(_ message: String, notificationUUID: String? = nil) -> NotificationRejection {
        NotificationRejection(retryLater: message, notificationUUID: notificationUUID)
    }

    /// What a signed-data error of `what` (a JWS of the notification) makes of it: `retryLater` when only the
    /// revocation status was unavailable, else `invalid_signature`.
    static func signedData(_ error: SignedDataError, _ what: String, notificationUUID: String? = nil)
        -> NotificationRejection
    {
        if error.isRetryable {
            return .retryLater(
                "\(what) could not be verified now: \(error.message)", notificationUUID: notificationUUID)
        }
        return NotificationRejection(
            .invalidSignature, "\(what) does not verify: \(error.message)", notificationUUID: notificationUUID)
    }

    public var description: String { "\(reason.rawValue): \(message)" }
}
