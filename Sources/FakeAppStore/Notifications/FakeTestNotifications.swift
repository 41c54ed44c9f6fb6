import Foundation
import HTTPServer
import ServiceSupport

/// Request a Test Notification and Get Test Notification Status, as Apple runs them: a TEST notification signed with
/// the fake's identity is POSTed to the app's notification URL (`--notification-url`, or `POST
/// /admin/notification-url?url=U`: App Store Connect's setting), kept in the notification history (with Get
/// Notification History) and its send attempts reported by token.
final class FakeTestNotifications: Sendable {
    private struct State {
        var admin: FakeNotificationAdmin?
        var url: String?
        /// Token -> the notification's UUID, the most recent `FakeNotificationHistory.defaultCapacity`.
        var tokens: [String: String] = [:]
        var order: [String] = []
    }

    private let state = Locked(State())

    /// Connects the sender (created after the Server API) and the initial URL.
    func attach(_ admin: FakeNotificationAdmin?, url: String?) {
        state.withLock { state in
            state.admin = admin
            state.url = url
        }
    }

    /// Where test notifications go; nil: Apple's 4040007 ServerNotificationURLNotFound.
    var url: String? {
        get { state.withLock { $0.url } }
        set { state.withLock { $0.url = newValue } }
    }

    func reset() {
        state.withLock { state in
            state.tokens = [:]
            state.order = []
        }
    }

    /// `POST /inApps/v1/notifications/test`: `{"testNotificationToken"}` once the notification is signed; it is sent
    /// in the background (attempts as the sender makes them, retried on its schedule for Production).
    func request(bundleId: String, environment: String) -> HTTPResponse {
        let (admin, url) = state.withLock { ($0.admin, $0.url) }
        guard let admin else { return FakeServerAPI.error(500, 5_000_000, "Notifications are disabled in the fake.") }
        guard let url else { return FakeServerAPI.error(404, 4_040_007, "Server notification URL not found.") }
        var options = FakeNotification.Options()
        options.bundleId = bundleId
        options.environment = environment
        let notification = FakeNotification.make(type: "TEST", options: options)
        let signedPayload: String
        do {
            signedPayload = try notification.signedPayload(signer: admin.signing.signer)
        } catch {
            return FakeServerAPI.error(500, 5_000_000, "An unknown error occurred.")
        }
        admin.history.add(notification, signedPayload: signedPayload, url: url)
        let token = notification.notificationUUID + "_" + String(SystemTime.wallMilliseconds())
        state.withLock { state in
            state.tokens[token] = notification.notificationUUID
            state.order.append(token)
            if state.order.count > FakeNotificationHistory.defaultCapacity {
                state.tokens[state.order.removeFirst()] = nil
            }
        }
        admin.sender.deliver(notification, signedPayload: signedPayload, to: url, retrySchedule: admin.retrySchedule)
        return .json(200, "{\"testNotificationToken\":\(JSONText.quoted(token))}")
    }

    /// `GET /inApps/v1/notifications/test/{token}`: `{"signedPayload", "sendAttempts": [{"attemptDate",
    /// "sendAttemptResult"}]}` (empty until the first attempt ends); 4040008 TestNotificationNotFound for a token it
    /// never gave out.
    func status(token: String) -> HTTPResponse {
        let (admin, uuid) = state.withLock { ($0.admin, $0.tokens[token]) }
        guard let admin, let uuid, let entry = admin.history.entry(uuid: uuid) else {
            return FakeServerAPI.error(404, 4_040_008, "Test notification not found.")
        }
        return .json(
            200,
            "{\"signedPayload\":\(JSONText.quoted(entry.signedPayload)),"
                + "\"sendAttempts\":\(entry.sendAttemptsJSON)}")
    }
}
