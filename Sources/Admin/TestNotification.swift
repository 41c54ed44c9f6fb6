import AppStoreServerAPI
import Dispatch
import ReceiptModel
import ServiceSupport
import SignedData

/// `test-notification`: Request a Test Notification, then Get Test Notification Status until Apple reports a send
/// attempt (or the wait ends): proof that Apple reaches this deployment's notification URL. The TEST notification
/// Apple signed is verified like any notification.
enum TestNotification {
    static let name = "test-notification"
    /// Between status calls (the endpoint's pace is 1/s in production, a tenth of that in the sandbox: the pacer
    /// spaces them further when needed).
    static let pollInterval: Duration = .seconds(1)

    static func run(waitSeconds: Int, _ context: AdminContext) async -> AdminReport {
        let requested = await context.caller.call(.testNotification, .post) { deadline in
            await context.client.requestTestNotification(
                bundleId: context.bundleId, environment: context.environment, deadline: deadline)
        }
        let token: String
        switch requested {
        case .failure(let error): return AdminContext.failure(name, error)
        case .success(let response):
            guard let value = response.testNotificationToken, !value.isEmpty else {
                return .failure(name, .unavailable, message: "Apple's answer carried no testNotificationToken")
            }
            token = value
        }
        let fields: [String: JSONValue] = [
            "test_notification_token": .string(token), "environment": .string(context.environment.rawValue),
        ]
        let waitUntil = DispatchTime.now() + .seconds(waitSeconds)
        var last: CheckTestNotificationResponse?
        while true {
            let status = await context.caller.call(.testNotification, .get) { deadline in
                await context.client.testNotificationStatus(
                    token: token, bundleId: context.bundleId, environment: context.environment, deadline: deadline)
            }
            switch status {
            case .success(let response):
                last = response
            case .failure(let error) where AdminExitCode.of(error) == .notFound:
                break  // not recorded yet: ask again
            case .failure(let error):
                return AdminContext.failure(name, error, fields: fields)
            }
            if let last, !last.sendAttempts.isEmpty { break }
            guard AppleCaller.millisecondsLeft(until: waitUntil) > 0 else { break }
            try? await Task.sleep(for: pollInterval)
        }
        guard let last else {
            return .failure(
                name, .notFound, message: "Apple reported no status for the test notification within \(waitSeconds) s",
                fields: fields)
        }
        var notification: NotificationPayload?
        if let signed = last.signedPayload {
            switch context.signed.notification(signed) {
            case .failure(let problem): return .failure(name, problem.exitCode, message: problem.description, fields: fields)
            case .success(let payload): notification = payload
            }
        }
        return report(
            token: token, environment: context.environment, attempts: last.sendAttempts,
            notificationUUID: notification?.notificationUUID,
            notificationType: notification?.notificationType?.rawValue,
            waitSeconds: waitSeconds)
    }

    /// Exit 0 when an attempt succeeded, 1 when none did (yet).
    static func report(
        token: String, environment: AppStoreEnvironment, attempts: [SendAttempt],
        notificationUUID: String?, notificationType: String?, waitSeconds: Int
    ) -> AdminReport {
        let delivered = attempts.contains { $0.sendAttemptResult == "SUCCESS" }
        var lines: [String] = []
        if delivered {
            lines.append(
                "Apple delivered the test notification \(notificationUUID ?? "-") to this deployment's notification "
                    + "URL (\(environment.rawValue)); its test event follows on the events topic")
        } else if attempts.isEmpty {
            lines.append("Apple made no send attempt within \(waitSeconds) s; run it again or raise --wait-seconds")
        } else {
            lines.append(
                "Apple could not deliver the test notification \(notificationUUID ?? "-"): check the App Store "
                    + "Server Notifications URL in App Store Connect and that the ingest answers it")
        }
        for attempt in attempts {
            lines.append("  attempt \(AdminTime.text(attempt.attemptDate)): \(attempt.sendAttemptResult ?? "-")")
        }
        return AdminReport(
            command: name, exitCode: delivered ? .ok : .notFound, lines: lines,
            fields: [
                "test_notification_token": .string(token), "environment": .string(environment.rawValue),
                "notification_uuid": .text(notificationUUID), "notification_type": .text(notificationType),
                "delivered": .bool(delivered),
                "send_attempts": .array(
                    attempts.map {
                        .object(["attempt_date_ms": .int($0.attemptDate), "result": .text($0.sendAttemptResult)])
                    }),
            ])
    }
}
