@testable import Admin
import AppStoreServerAPI
import Dispatch
import Foundation
import ServiceSupport
import Synchronization
import Testing

/// The retries every call gets: a 429 waited out for its Retry-After, a 5xx or timeout retried after a backoff,
/// a refusal not retried, all within the deadline; one audit line per attempt.
@Suite struct AppleCallerTests {
    typealias Answer = AppStoreServerAPIClient.Answer<String>

    /// Answers scripted in order; the last repeats.
    final class Script: Sendable {
        private let answers: [Answer]
        private let index = Locked(0)
        init(_ answers: [Answer]) { self.answers = answers }
        var calls: Int { index.withLock { $0 } }
        func next() -> Answer {
            index.withLock { index in
                defer { index += 1 }
                return answers[min(index, answers.count - 1)]
            }
        }
    }

    final class Lines: Sendable {
        private let lines = Locked<[String]>([])
        var all: [[String: Any]] {
            lines.withLock { $0 }.compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        var log: AuditLog { AuditLog { line in self.lines.withLock { $0.append(line) } } }
    }

    private static func failure(_ kind: ServerAPIError.Kind, status: Int?, code: Int? = nil, retryAfterMs: Int? = nil)
        -> Answer
    {
        Answer(
            result: .failure(
                ServerAPIError(
                    kind, "scripted", environment: .production, httpStatus: status, errorCode: code,
                    retryAfterMs: retryAfterMs)), calls: 1, httpStatus: status)
    }

    private static let ok = Answer(result: .success("answer"), calls: 1, httpStatus: 200)

    private func caller(_ lines: Lines, deadlineSeconds: Int = 10) -> AppleCaller {
        AppleCaller(
            environment: .production, deadlineSeconds: deadlineSeconds, audit: lines.log,
            initialBackoff: .milliseconds(20), maximumBackoff: .milliseconds(100))
    }

    @Test func a429IsWaitedOutForItsRetryAfterThenTheCallSucceeds() async throws {
        let lines = Lines()
        let script = Script([Self.failure(.rateLimited, status: 429, code: 4_290_000, retryAfterMs: 300), Self.ok])
        let started = ContinuousClock.now
        let result = await caller(lines).call(.refundHistory, .get) { _ in script.next() }
        #expect(try result.get() == "answer")
        #expect(ContinuousClock.now - started >= .milliseconds(300), "Retry-After honoured")
        #expect(script.calls == 2)
        let audit = lines.all
        #expect(audit.count == 2)
        #expect(audit[0]["attempt"] as? Int == 1 && audit[0]["http_status"] as? Int == 429)
        #expect(audit[0]["outcome"] as? String == "rate_limited" && audit[0]["retry_in_ms"] as? Int == 350)
        #expect(audit[1]["attempt"] as? Int == 2 && audit[1]["http_status"] as? Int == 200)
        #expect(audit[1]["outcome"] as? String == "ok" && audit[1]["retry_in_ms"] is NSNull)
        #expect(audit.allSatisfy { $0["endpoint"] as? String == "refund_history" })
    }

    @Test func fiveHundredsAreRetriedWithABackoffUntilTheyStop() async throws {
        let lines = Lines()
        let script = Script([
            Self.failure(.retryable, status: 503), Self.failure(.retryable, status: 500, code: 5_000_001),
            Self.failure(.retryable, status: nil), Self.ok,
        ])
        let result = await caller(lines).call(.orderLookup, .get) { _ in script.next() }
        #expect(try result.get() == "answer")
        #expect(lines.all.map { $0["attempt"] as? Int } == [1, 2, 3, 4])
        #expect(lines.all.compactMap { $0["retry_in_ms"] as? Int } == [20, 40, 80], "doubling from the first wait")
    }

    @Test func aRefusalOrNotFoundIsNotRetried() async {
        for kind in [ServerAPIError.Kind.notFound, .invalidTransactionId, .invalidRequest, .unauthorized] {
            let lines = Lines()
            let script = Script([Self.failure(kind, status: 404, code: 4_040_010), Self.ok])
            let result = await caller(lines).call(.transactionInfo, .get) { _ in script.next() }
            guard case .failure(let error) = result else {
                Issue.record("\(kind) was retried")
                continue
            }
            #expect(error.kind == kind && script.calls == 1 && lines.all.count == 1)
        }
    }

    @Test func retriesStopAtTheDeadlineWithTheLastError() async {
        let lines = Lines()
        let script = Script([Self.failure(.rateLimited, status: 429, code: 4_290_000, retryAfterMs: 5_000)])
        let started = ContinuousClock.now
        let result = await caller(lines, deadlineSeconds: 1).call(.extendRenewal, .put) { _ in script.next() }
        guard case .failure(let error) = result else {
            Issue.record("a 429 past the deadline cannot succeed")
            return
        }
        #expect(error.kind == .rateLimited && AdminExitCode.of(error) == .unavailable)
        #expect(ContinuousClock.now - started < .seconds(1), "no wait that the deadline cannot hold")
        #expect(script.calls == 1 && lines.all.first?["retry_in_ms"] is NSNull)
    }
}
