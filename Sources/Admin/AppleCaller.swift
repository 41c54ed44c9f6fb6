import AppStoreServerAPI
import Dispatch
import HTTPClient
import ReceiptModel
import ServiceSupport

/// Makes one App Store Server API call the way an operator's tool must: a 429 is waited out for its `Retry-After`
/// (the client holds the endpoint back for as long), a 5xx, a timeout or a connection failure is retried after a
/// backoff (`Backoff`), all within one deadline; every attempt writes one audit line.
public struct AppleCaller: Sendable {
    public let environment: AppStoreEnvironment
    /// The deadline of each call, its retries included.
    public let deadlineSeconds: Int
    private let audit: AuditLog
    private let initialBackoff: Duration
    private let maximumBackoff: Duration

    public init(
        environment: AppStoreEnvironment, deadlineSeconds: Int, audit: AuditLog,
        initialBackoff: Duration = .milliseconds(500), maximumBackoff: Duration = .seconds(10)
    ) {
        self.environment = environment
        self.deadlineSeconds = deadlineSeconds
        self.audit = audit
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
    }

    /// Calls `send` (one client call, given the deadline) until it succeeds, fails for good, or the deadline leaves
    /// no time for another attempt; the last failure is returned.
    public func call<Value: Sendable>(
        _ endpoint: ServerAPIEndpoint, _ method: HTTPMethod,
        _ send: @Sendable (DispatchTime) async -> AppStoreServerAPIClient.Answer<Value>
    ) async -> Result<Value, ServerAPIError> {
        let deadline = DispatchTime.now() + .seconds(deadlineSeconds)
        var backoff = Backoff(initial: initialBackoff, maximum: maximumBackoff)
        var attempt = 0
        while true {
            attempt += 1
            let started = SystemTime.monotonicNanoseconds()
            let answer = await send(deadline)
            let durationMs = Int((SystemTime.monotonicNanoseconds() - started) / 1_000_000)
            let error: ServerAPIError
            switch answer.result {
            case .success(let value):
                audit.record(
                    AuditEntry(
                        endpoint: endpoint, method: method, environment: environment, attempt: attempt,
                        httpStatus: answer.httpStatus, errorCode: nil, outcome: "ok", durationMs: durationMs,
                        retryInMs: nil))
                return .success(value)
            case .failure(let failure):
                error = failure
            }
            let waitMs: Int?
            switch error.kind {
            case .rateLimited:
                // A little past the hold, so the next attempt is not refused by the client's own hold-back.
                let backoffMs = Int(backoff.next() / .milliseconds(1))
                waitMs = (error.retryAfterMs ?? backoffMs) + 50
            case .retryable:
                waitMs = Int(backoff.next() / .milliseconds(1))
            default:
                waitMs = nil
            }
            let leftMs = Self.millisecondsLeft(until: deadline)
            let retryInMs = waitMs.flatMap { $0 < leftMs ? $0 : nil }
            audit.record(
                AuditEntry(
                    endpoint: endpoint, method: method, environment: environment, attempt: attempt,
                    httpStatus: answer.httpStatus ?? error.httpStatus, errorCode: error.errorCode,
                    outcome: AuditEntry.outcome(of: error), durationMs: durationMs, retryInMs: retryInMs))
            guard let retryInMs else { return .failure(error) }
            try? await Task.sleep(for: .milliseconds(retryInMs))
        }
    }

    static func millisecondsLeft(until deadline: DispatchTime) -> Int {
        let now = DispatchTime.now().uptimeNanoseconds
        return deadline.uptimeNanoseconds > now ? Int((deadline.uptimeNanoseconds - now) / 1_000_000) : 0
    }
}
