import ServiceSupport

/// A decoded App Store Server Notification V2 (`ResponseBodyV2DecodedPayload`, §3.2).
///
/// `data` carries in-app purchase events (with the transaction and renewal info as JWS strings still to be
/// verified); `summary`, `externalPurchaseToken` and `appData` are kept loosely as JSON.
public struct NotificationPayload: Sendable, Equatable, Decodable {
    public var notificationType: NotificationType?
    public var subtype: NotificationSubtype?
    /// The notification's unique id; Apple's retries repeat it (the idempotency key).
    public var notificationUUID: String?
    public var version: String?
    /// Epoch ms at which the App Store signed the notification.
    public var signedDate: Int64?
    public var data: NotificationData?
    public var summary: JSONValue?
    public var externalPurchaseToken: JSONValue?
    public var appData: JSONValue?

    public init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: AnyCodingKey.self)
        notificationType = fields.lenient("notificationType")
        subtype = fields.lenient("subtype")
        notificationUUID = fields.lenientString("notificationUUID")
        version = fields.lenientString("version")
        signedDate = fields.lenientMillis("signedDate")
        data = try? fields.decodeIfPresent(NotificationData.self, forKey: AnyCodingKey("data"))
        summary = try? fields.decodeIfPresent(JSONValue.self, forKey: AnyCodingKey("summary"))
        externalPurchaseToken = try? fields.decodeIfPresent(JSONValue.self, forKey: AnyCodingKey("externalPurchaseToken"))
        appData = try? fields.decodeIfPresent(JSONValue.self, forKey: AnyCodingKey("appData"))
    }
}
