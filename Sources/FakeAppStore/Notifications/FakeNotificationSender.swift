import Dispatch
import Foundation
import HTTPClient
import ServiceSupport

/// POSTs signed notifications the way Apple does: `{"signedPayload": "<JWS>"}` to a URL; an answer 200-206 is a
/// delivery, anything else (another status, no connection, a timeout) a failure retried after each wait of the retry
/// schedule in turn. Apple's schedule is 1, 12, 24, 48 and 72 hours after the previous attempt, and only for
/// Production notifications: Apple sends a Sandbox notification once. Every attempt is recorded in the history.
public final class FakeNotificationSender: Sendable {
    /// Apple's V2 retry schedule: waits after the first, second, ... failed attempt.
    public static let appleRetrySchedule: [Duration] = [.seconds(3_600), .seconds(43_200), .seconds(86_400),
                                                         .seconds(172_800), .seconds(259_200)]

    public let history: FakeNotificationHistory
    private let client: CurlHTTPClient
    private let logger: Logger
    private let timers = DispatchQueue(label: "fake-appstore-notification-retries")

    /// - Throws: `HTTPClientError` when the HTTP client cannot be created.
    public init(history: FakeNotificationHistory, logger: Logger, timeoutMs: Int = 10_000) throws(HTTPClientError) {
        self.history = history
        self.logger = logger
        client = try CurlHTTPClient(
            configuration: HTTPClientConfiguration(
                maxInFlight: 64, requestTimeoutMs: timeoutMs, connectTimeoutMs: min(timeoutMs, 5_000),
                completionConcurrency: 1, userAgent: "fake-appstore-notifications"))
    }

    /// Signs nothing: delivers `signedPayload` (already in the history as `notification`) to `url`.
    /// - Parameters:
    ///   - retrySchedule: waits between attempts after failures (Apple's by default); ignored for Sandbox.
    ///   - firstAttempt: called once with the first attempt's outcome.
    ///   - finished: called once when delivered or when the schedule is exhausted, with every attempt.
    public func deliver(
        _ notification: FakeNotification, signedPayload: String, to url: String,
        retrySchedule: [Duration] = FakeNotificationSender.appleRetrySchedule,
        firstAttempt: @escaping @Sendable (FakeNotificationHistory.Attempt) -> Void = { _ in },
        finished: @escaping @Sendable ([FakeNotificationHistory.Attempt]) -> Void = { _ in }
    ) {
        let schedule = notification.environment == "Production" ? retrySchedule : []
        let body = Array("{\"signedPayload\":\(JSONText.quoted(signedPayload))}".utf8)
        attempt(
            uuid: notification.notificationUUID, url: url, body: body, remaining: schedule[...], number: 1,
            firstAttempt: firstAttempt, finished: finished)
    }

    private func attempt(
        uuid: String, url: String, body: [UInt8], remaining: ArraySlice<Duration>, number: Int,
        firstAttempt: @escaping @Sendable (FakeNotificationHistory.Attempt) -> Void,
        finished: @escaping @Sendable ([FakeNotificationHistory.Attempt]) -> Void
    ) {
        let request = HTTPClientRequest(url: url, body: body, headers: ["Content-Type: application/json"])
        client.send(request) { result in
            let attempt = Self.attempt(from: result)
            let done = attempt.succeeded || remaining.isEmpty
            self.history.recordAttempt(attempt, uuid: uuid, finished: done)
            self.logger.info(
                "notification delivery attempt",
                [
                    "notification_uuid": .string(uuid), "attempt": .int(number), "result": .string(attempt.result),
                    "http_status": .int(attempt.httpStatus ?? 0), "retries_left": .int(done ? 0 : remaining.count),
                ])
            if number == 1 { firstAttempt(attempt) }
            if done {
                finished(self.history.entry(uuid: uuid)?.attempts ?? [attempt])
                return
            }
            let wait = remaining.first ?? .zero
            let nanoseconds = Int(clamping: wait.clampedNanoseconds)
            self.timers.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) {
                self.attempt(
                    uuid: uuid, url: url, body: body, remaining: remaining.dropFirst(), number: number + 1,
                    firstAttempt: firstAttempt, finished: finished)
            }
        }
    }

    private static func attempt(from result: Result<HTTPClientResponse, HTTPClientError>)
        -> FakeNotificationHistory.Attempt
    {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        switch result {
        case .success(let response):
            let result = (200...206).contains(response.status) ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
            return .init(dateMs: now, result: result, httpStatus: response.status)
        case .failure(let error):
            let result =
                switch error.kind {
                case .timeout: "TIMED_OUT"
                case .tls: "TLS_ISSUE"
                case .connectionFailed: "SOCKET_ISSUE"
                default: "OTHER"
                }
            return .init(dateMs: now, result: result, httpStatus: nil)
        }
    }

    /// Closes the HTTP client: pending retries then fail at once.
    public func close() {
        client.close()
    }
}
