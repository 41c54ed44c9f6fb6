import Crypto
import HTTPServer
import ServiceSupport

/// The fake's notification endpoints:
/// - `POST /admin/notifications/send?url=...&type=...[&subtype=...&transaction_id=...]` (parameters as in
///   `FakeNotificationRequest`): signs a notification, POSTs it and answers after the first attempt
///   (`{"notification_uuid","delivered","first_attempt":{...},"retries_left"}`); failed deliveries are retried in the
///   background on the retry schedule. `deliver=0` only records it (a notification the server never got).
/// - `GET /admin/notifications[?uuid=...]`: every notification signed so far with its attempts.
/// Notifications are signed with the fake's signing identity (`GET /admin/signing-root` serves its root).
final class FakeNotificationAdmin: Sendable {
    let signing: FakeSigningIdentity
    let sender: FakeNotificationSender
    let retrySchedule: [Duration]
    private let logger: Logger

    init(signing: FakeSigningIdentity, sender: FakeNotificationSender, retrySchedule: [Duration], logger: Logger) {
        self.signing = signing
        self.sender = sender
        self.retrySchedule = retrySchedule
        self.logger = logger
    }

    var history: FakeNotificationHistory { sender.history }

    /// Handles `request` when it is one of these endpoints; false otherwise.
    func handle(_ request: HTTPRequest, respond: @escaping HTTPResponder) -> Bool {
        switch (request.method, request.path) {
        case ("POST", "/admin/notifications/send"):
            send(request, respond: respond)
        case ("GET", "/admin/notifications"):
            respond(.json(200, list(uuid: request.query["uuid"])))
        default:
            return false
        }
        return true
    }

    private func send(_ request: HTTPRequest, respond: @escaping HTTPResponder) {
        let parsed: FakeNotificationRequest
        do {
            parsed = try FakeNotificationRequest.parse(request.query)
        } catch {
            respond(Self.error(400, "bad_notification", error.description))
            return
        }
        let notification = parsed.notification
        let signedPayload: String
        do {
            signedPayload = try notification.signedPayload(signer: signing.signer)
        } catch {
            respond(Self.error(500, "signing_failed", error.message))
            return
        }
        history.add(notification, signedPayload: signedPayload, url: parsed.url)
        let identity = Self.identity(notification)
        guard let url = parsed.url else {
            logger.info(
                "notification recorded without delivery", ["notification_uuid": .string(notification.notificationUUID)])
            respond(.json(200, "{\(identity),\"delivered\":false,\"recorded_only\":true}"))
            return
        }
        let schedule = parsed.retrySchedule ?? retrySchedule
        let retries = notification.environment == "Production" ? schedule.count : 0
        sender.deliver(
            notification, signedPayload: signedPayload, to: url, retrySchedule: schedule,
            firstAttempt: { attempt in
                let left = attempt.succeeded ? 0 : retries
                respond(
                    .json(
                        200,
                        "{\(identity),\"delivered\":\(attempt.succeeded),\"first_attempt\":\(Self.json(attempt)),"
                            + "\"retries_left\":\(left)}"))
            })
    }

    private func list(uuid: String?) -> String {
        let entries = history.all.filter { uuid == nil || $0.notificationUUID == uuid }
        let items = entries.map { entry in
            "{\"notification_uuid\":\(JSONText.quoted(entry.notificationUUID)),"
                + "\"notification_type\":\(JSONText.quoted(entry.notificationType)),"
                + "\"subtype\":\(entry.subtype.map(JSONText.quoted) ?? "null"),"
                + "\"transaction_id\":\(entry.transactionId.map(JSONText.quoted) ?? "null"),"
                + "\"delivered\":\(entry.delivered),\"finished\":\(entry.finished),"
                + "\"attempts\":[\(entry.attempts.map(Self.json).joined(separator: ","))]}"
        }
        return "{\"notifications\":[\(items.joined(separator: ","))]}"
    }

    private static func identity(_ notification: FakeNotification) -> String {
        "\"notification_uuid\":\(JSONText.quoted(notification.notificationUUID)),"
            + "\"notification_type\":\(JSONText.quoted(notification.notificationType)),"
            + "\"subtype\":\(notification.subtype.map(JSONText.quoted) ?? "null"),"
            + "\"transaction_id\":\(notification.transaction.map { JSONText.quoted($0.transactionId) } ?? "null"),"
            + "\"original_transaction_id\":"
            + "\(notification.transaction.map { JSONText.quoted($0.originalTransactionId) } ?? "null")"
    }

    private static func error(_ status: Int, _ code: String, _ message: String) -> HTTPResponse {
        .json(status, "{\"error\":{\"code\":\(JSONText.quoted(code)),\"message\":\(JSONText.quoted(message))}}")
    }

    static func json(_ attempt: FakeNotificationHistory.Attempt) -> String {
        "{\"date_ms\":\(attempt.dateMs),\"result\":\(JSONText.quoted(attempt.result)),"
            + "\"http_status\":\(attempt.httpStatus.map(String.init) ?? "null")}"
    }
}
