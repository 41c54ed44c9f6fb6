/// An App Store Server Notification V2 as Apple posted it: the message on `NOTIFICATIONS_TOPIC` (schema version 1).
///
/// Written by the ingest (`POST /v1/apple/notifications`) and by `receipt-notifications-backfill`; nothing in it is
/// verified yet: the verifier checks the signed payload and turns it into a purchase event.
/// See `schemas/notification.schema.json`.
public struct NotificationRecord: Codable, Sendable, Equatable {
    public static let currentSchemaVersion = 1

    /// How the notification reached the pipeline.
    public enum Origin: String, Codable, Sendable, CaseIterable {
        /// Apple POSTed it to the ingest.
        case appleDelivery = "apple_delivery"
        /// Recovered from Get Notification History by `receipt-notifications-backfill`.
        case notificationHistory = "notification_history"
    }

    public var schemaVersion: Int
    /// Apple's `signedPayload`: a compact JWS, unverified.
    public var signedPayload: String
    /// When the ingest (or the backfill) received it, milliseconds since the Unix epoch.
    public var receivedAtMs: Int64
    public var origin: Origin

    public init(signedPayload: String, receivedAtMs: Int64, origin: Origin = .appleDelivery) {
        self.schemaVersion = Self.currentSchemaVersion
        self.signedPayload = signedPayload
        self.receivedAtMs = receivedAtMs
        self.origin = origin
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case signedPayload = "signed_payload"
        case receivedAtMs = "received_at_ms"
        case origin
    }
}
