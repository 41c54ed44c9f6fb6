@testable import AppStoreServerAPI
import Crypto
import Dispatch
import FakeAppStore
import Foundation
@testable import HTTPClient
import ReceiptModel
import ServiceSupport
import SignedData
import Testing

@testable import AppStore
import TestPKI

/// The App Store Server API client (real libcurl client) against the in-process fake: answers, every error class,
/// the bearer token's life, 429 hold-backs and pacing.
@Suite(.serialized) struct AppStoreServerAPIClientTests {
    @Test func transactionInfoReturnsAppleSignedDataAboutTheTransactionAsked() async throws {
        let harness = try ServerAPIHarness()
        let answer = await harness.client.transactionInfo(
            transactionId: "1000000000000042", bundleId: ServerAPIHarness.bundleId, environment: .production,
            deadline: harness.deadline())
        let info = try answer.result.get()
        #expect(answer.calls == 1)
        let payload = try harness.pki.verifier().verify(info.signedTransactionInfo).decode(JWSTransactionPayload.self)
        #expect(payload.transactionId == "1000000000000042")
        #expect(payload.bundleId == ServerAPIHarness.bundleId)
        #expect(payload.environment == .production)
        #expect(harness.fake.serverAPICalls(transaction: "1000000000000042") == (1, 0))
    }

    @Test func unknownIdsOtherAppsAndNonIdsAreClassified() async throws {
        let harness = try ServerAPIHarness()
        // A production transaction asked in the sandbox, or for another app's token: 4040010.
        let sandbox = await harness.client.transactionInfo(
            transactionId: "77", bundleId: ServerAPIHarness.bundleId, environment: .sandbox, deadline: harness.deadline())
        #expect(sandbox.result.error?.kind == .notFound)
        #expect(sandbox.result.error?.errorCode == 4_040_010)
        #expect(sandbox.result.error?.environment == .sandbox)
        let otherApp = await harness.client.transactionInfo(
            transactionId: "77", bundleId: "com.example.other", environment: .production, deadline: harness.deadline())
        #expect(otherApp.result.error?.kind == .notFound)
        let notAnId = await harness.client.transactionInfo(
            transactionId: "notanid", bundleId: ServerAPIHarness.bundleId, environment: .production,
            deadline: harness.deadline())
        #expect(notAnId.result.error?.kind == .invalidTransactionId)
        #expect(notAnId.result.error?.errorCode == 4_000_006)
    }

    @Test func aRefusedTokenIsDroppedAndTheCallMadeOnceMoreWithAFreshOne() async throws {
        let harness = try ServerAPIHarness()
        harness.fake.register(FakeServerTransaction(id: "501", failures: [.init(httpStatus: 401)]))
        let before = try harness.tokens.token(bundleId: ServerAPIHarness.bundleId)
        // Tokens of other apps are cached separately and untouched.
        let otherApp = try harness.tokens.token(bundleId: "com.example.other")
        // The provider's clock has a one-second grain: make sure the fresh token differs from the refused one.
        try await Task.sleep(for: .milliseconds(1_100))
        let answer = await harness.client.transactionInfo(
            transactionId: "501", bundleId: ServerAPIHarness.bundleId, environment: .production,
            deadline: harness.deadline())
        #expect(try answer.result.get().signedTransactionInfo.isEmpty == false)
        #expect(answer.calls == 2)
        let after = try harness.tokens.token(bundleId: ServerAPIHarness.bundleId)
        #expect(after != before)
        #expect(after.issuedAt > before.issuedAt)
        #expect(try harness.tokens.token(bundleId: "com.example.other") == otherApp)
        #expect(harness.fake.serverAPICalls(transaction: "501") == (2, 0))
    }

    @Test func aTokenRefusedAgainWhenFreshIsAConfigurationProblem() async throws {
        let harness = try ServerAPIHarness(fakeKey: try ECPrivateKey.generate(curve: .p256).publicKey)
        let answer = await harness.client.transactionInfo(
            transactionId: "502", bundleId: ServerAPIHarness.bundleId, environment: .production,
            deadline: harness.deadline())
        let error = try #require(answer.result.error)
        #expect(error.kind == .unauthorized)
        #expect(error.httpStatus == 401)
        #expect(error.message.contains("APPLE_PRIVATE_KEY_FILE"))
        #expect(answer.calls == 2)
        #expect(harness.fake.serverAPIUnauthorizedCount == 2)
    }

    static let retryAfterForms: [(name: String, header: @Sendable (Int64) -> String, holdMs: Int)] = [
        ("epoch milliseconds", { String($0 + 30_000) }, 30_000),
        ("epoch seconds", { String($0 / 1_000 + 45) }, 45_000),
        ("delta seconds", { _ in "12" }, 12_000),
    ]

    @Test(arguments: 0..<3)
    func a429HoldsBackItsEndpointAndEnvironmentForRetryAfter(form: Int) async throws {
        let (name, header, holdMs) = Self.retryAfterForms[form]
        let now: Int64 = 1_767_225_600_000
        let harness = try ServerAPIHarness(wallClockMs: { now })
        harness.fake.register(
            FakeServerTransaction(
                id: "429", failures: [.init(httpStatus: 429, errorCode: 4_290_000, retryAfter: header(now))]))
        let limited = await harness.client.transactionInfo(
            transactionId: "429", bundleId: ServerAPIHarness.bundleId, environment: .production,
            deadline: harness.deadline())
        let error = try #require(limited.result.error, "\(name)")
        #expect(error.kind == .rateLimited, "\(name)")
        #expect(error.retryAfterMs == holdMs, "\(name)")
        #expect(!error.heldBack)
        // During the hold, any call to that endpoint in production is refused without a request.
        let held = await harness.client.transactionInfo(
            transactionId: "430", bundleId: ServerAPIHarness.bundleId, environment: .production,
            deadline: harness.deadline())
        let heldError = try #require(held.result.error)
        #expect(heldError.kind == .rateLimited && heldError.heldBack)
        #expect((heldError.retryAfterMs ?? 0) > holdMs - 5_000 && (heldError.retryAfterMs ?? 0) <= holdMs)
        #expect(held.calls == 0)
        #expect(harness.fake.serverAPICalls(transaction: "430") == (0, 0))
        // Other endpoints, and the sandbox, are not held.
        let history = await harness.client.transactionHistoryPage(
            transactionId: "430", bundleId: ServerAPIHarness.bundleId, environment: .production, revision: nil,
            deadline: harness.deadline())
        #expect(try history.result.get().signedTransactions.count == 1)
        let sandbox = await harness.client.transactionInfo(
            transactionId: "430", bundleId: ServerAPIHarness.bundleId, environment: .sandbox,
            deadline: harness.deadline())
        #expect(sandbox.result.error?.kind == .notFound)
        #expect(harness.pacer.currentHolds.keys.map(\.description) == ["transaction_info/Production"])
    }

    static let classified: [(status: Int, code: Int?, kind: ServerAPIError.Kind)] = [
        (503, nil, .retryable), (500, 5_000_001, .retryable), (500, 5_000_000, .retryable),
        (404, 4_040_002, .retryable), (404, 4_040_004, .retryable), (404, 4_040_006, .retryable),
        (400, 4_000_005, .retryable), (404, 4_040_010, .notFound), (400, 4_000_006, .invalidTransactionId),
        (400, 4_000_002, .invalidRequest), (403, 4_030_004, .invalidRequest), (400, nil, .invalidRequest),
        (404, 9_990_000, .invalidRequest), (502, 9_990_000, .retryable),
    ]

    @Test(arguments: 0..<14)
    func errorAnswersAreClassifiedByApplesCodeThenByHTTPStatus(index: Int) async throws {
        let (status, code, kind) = Self.classified[index]
        let harness = try ServerAPIHarness()
        harness.fake.register(FakeServerTransaction(id: "900", failures: [.init(httpStatus: status, errorCode: code)]))
        let answer = await harness.client.transactionInfo(
            transactionId: "900", bundleId: ServerAPIHarness.bundleId, environment: .production,
            deadline: harness.deadline())
        let error = try #require(answer.result.error)
        #expect(error.kind == kind, "HTTP \(status) errorCode \(String(describing: code))")
        #expect(error.httpStatus == status)
        #expect(error.errorCode == code)
        if kind == .invalidRequest { #expect(error.message.contains("check the settings")) }
        #expect(answer.calls == 1)
        // The failure was scripted once: the next call gets the transaction.
        let next = await harness.client.transactionInfo(
            transactionId: "900", bundleId: ServerAPIHarness.bundleId, environment: .production,
            deadline: harness.deadline())
        #expect(next.result.error == nil)
    }

    @Test func transportFailuresAreRetryable() async throws {
        let harness = try ServerAPIHarness(timeoutMs: 300)
        let closed = AppStoreServerAPIClient(
            http: harness.http, endpoints: .init(production: "http://127.0.0.1:9", sandbox: "http://127.0.0.1:9"),
            tokens: harness.tokens, pacer: harness.pacer, requestTimeoutMs: 300, logger: .quiet)
        let refused = await closed.transactionInfo(
            transactionId: "1", bundleId: ServerAPIHarness.bundleId, environment: .production,
            deadline: harness.deadline())
        #expect(refused.result.error?.kind == .retryable)
        harness.fake.register(FakeServerTransaction(id: "901", delayMs: 2_000))
        let slow = await harness.client.transactionInfo(
            transactionId: "901", bundleId: ServerAPIHarness.bundleId, environment: .production,
            deadline: harness.deadline())
        #expect(slow.result.error?.kind == .retryable)
        #expect(slow.result.error?.message.contains("timeout") == true)
    }

    @Test func hostileAnswerBodiesAreCleanErrorsWithBoundedMessages() {
        // A million '[', a number as large as the client takes (64 MiB), invalid UTF-8, a raw NUL, and an
        // errorMessage of a MiB: what a proxy or a broken edge could answer.
        let key = ServerAPIPacing.Key(.transactionInfo, .production)
        let bodies: [(String, [UInt8])] = [
            ("deep", [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)),
            ("huge number", Array(#"{"signedTransactionInfo":"#.utf8) + [UInt8](repeating: 0x37, count: 64 << 20)),
            ("invalid UTF-8", Array(#"{"signedTransactionInfo":""#.utf8) + [0xFF, 0xFE, 0x22, 0x7D]),
            ("raw NUL", Array(#"{"signedTransactionInfo":"a.b\#u{0}.c"}"#.utf8)),
            ("long message", Array(#"{"errorCode":4040010,"errorMessage":""#.utf8)
                + [UInt8](repeating: UInt8(ascii: "x"), count: 1 << 20) + Array(#""}"#.utf8)),
        ]
        for (name, body) in bodies {
            let started = ContinuousClock.now
            let info: Result<TransactionInfoResponse, ServerAPIError> = AppStoreServerAPIClient.interpret(
                HTTPClientResponse(status: 200, body: body), key: key, nowWallMs: 0)
            let history: Result<HistoryResponse, ServerAPIError> = AppStoreServerAPIClient.interpret(
                HTTPClientResponse(status: 200, body: body), key: key, nowWallMs: 0)
            let refused: Result<TransactionInfoResponse, ServerAPIError> = AppStoreServerAPIClient.interpret(
                HTTPClientResponse(status: 404, body: body), key: key, nowWallMs: 0)
            // Objects without the page's list are not pages either (see the test below).
            #expect(info.error?.kind == .retryable && history.error?.kind == .retryable, "\(name)")
            #expect(refused.error?.httpStatus == 404, "\(name)")
            for error in [info.error, history.error, refused.error].compactMap({ $0 }) {
                #expect(error.message.count < 600, "\(name): a message of \(error.message.count) characters")
            }
            // Linear work, well under a second each; a generous bound for a loaded machine.
            #expect(ContinuousClock.now - started < .seconds(10), "\(name)")
        }
    }

    @Test func aTwoHundredWithoutThePagesListIsRetryableNeverAnEmptyHistory() {
        // An empty history would reject the receipt (transaction_not_found) or end a backfill early: a body without
        // `signedTransactions` / `notificationHistory` (a proxy's `{}`, an error object sent with 200) is unreadable.
        let key = ServerAPIPacing.Key(.transactionHistory, .production)
        for body in ["{}", #"{"hasMore":false}"#, #"{"status":"ok"}"#, #"{"errorCode":5000000}"#] {
            let history: Result<HistoryResponse, ServerAPIError> = AppStoreServerAPIClient.interpret(
                HTTPClientResponse(status: 200, body: Array(body.utf8)), key: key, nowWallMs: 0)
            let notifications: Result<NotificationHistoryResponse, ServerAPIError> = AppStoreServerAPIClient.interpret(
                HTTPClientResponse(status: 200, body: Array(body.utf8)), key: key, nowWallMs: 0)
            #expect(history.error?.kind == .retryable, "\(body)")
            #expect(notifications.error?.kind == .retryable, "\(body)")
        }
        let last: Result<HistoryResponse, ServerAPIError> = AppStoreServerAPIClient.interpret(
            HTTPClientResponse(status: 200, body: Array(#"{"signedTransactions":[]}"#.utf8)), key: key, nowWallMs: 0)
        #expect((try? last.get())?.hasMore == false)
    }

    @Test func historyIsReadPageByPageWithTheRevisionAndTheSameQuery() async throws {
        let harness = try ServerAPIHarness()
        for index in 0..<25 {
            harness.fake.register(
                FakeServerTransaction(
                    id: String(3_000 + index), originalId: "3000", purchaseDateMs: 1_700_000_000_000 + Int64(index)))
        }
        let first = try await harness.client.transactionHistoryPage(
            transactionId: "3000", bundleId: ServerAPIHarness.bundleId, environment: .production,
            query: TransactionHistoryQuery(sort: .descending), revision: nil, deadline: harness.deadline()
        ).result.get()
        #expect(first.hasMore)
        #expect(first.signedTransactions.count == 20)
        let second = try await harness.client.transactionHistoryPage(
            transactionId: "3000", bundleId: ServerAPIHarness.bundleId, environment: .production,
            query: TransactionHistoryQuery(sort: .descending), revision: first.revision, deadline: harness.deadline()
        ).result.get()
        #expect(!second.hasMore)
        let ids = try (first.signedTransactions + second.signedTransactions).map {
            try harness.pki.verifier().verify($0).decode(JWSTransactionPayload.self).transactionId ?? ""
        }
        #expect(ids == (0..<25).reversed().map { String(3_000 + $0) })
        // The query string carries the repeated query and the revision.
        #expect(
            TransactionHistoryQuery(productIds: ["a b"], sort: .ascending, revoked: false).queryString(revision: "r/1")
                == "revision=r%2F1&productId=a%20b&sort=ASCENDING&revoked=false")
    }

    @Test func notificationHistoryPagesTwentyAtATimeAndFilters() async throws {
        let harness = try ServerAPIHarness()
        let start: Int64 = 1_767_225_600_000
        for index in 0..<25 {
            let transaction = try harness.sign(harness.payload(id: String(4_000 + index)))
            let type = index < 22 ? "ONE_TIME_CHARGE" : "REFUND"
            let payload = """
                {"notificationType":"\(type)","notificationUUID":"n-\(index)","signedDate":\(start + Int64(index)),\
                "data":{"environment":"Production","bundleId":"\(ServerAPIHarness.bundleId)",\
                "signedTransactionInfo":"\(transaction)"}}
                """
            harness.fake.appendNotificationHistory(
                signedPayload: try harness.sign(payload),
                sendAttemptsJSON: index == 3 ? #"[{"attemptDate":1,"sendAttemptResult":"TIMED_OUT"}]"# : nil)
        }
        let request = NotificationHistoryRequest(startDate: start, endDate: start + 1_000)
        let first = try await harness.client.notificationHistoryPage(
            request, paginationToken: nil, bundleId: ServerAPIHarness.bundleId, environment: .production,
            deadline: harness.deadline()
        ).result.get()
        #expect(first.notificationHistory.count == 20 && first.hasMore)
        #expect(first.notificationHistory[0].sendAttempts.first?.sendAttemptResult == "SUCCESS")
        #expect(first.paginationToken != nil)
        let second = try await harness.client.notificationHistoryPage(
            request, paginationToken: first.paginationToken, bundleId: ServerAPIHarness.bundleId,
            environment: .production, deadline: harness.deadline()
        ).result.get()
        #expect(second.notificationHistory.count == 5 && !second.hasMore && second.paginationToken == "n25")

        func count(_ request: NotificationHistoryRequest) async throws -> Int {
            try await harness.client.notificationHistoryPage(
                request, paginationToken: nil, bundleId: ServerAPIHarness.bundleId, environment: .production,
                deadline: harness.deadline()
            ).result.get().notificationHistory.count
        }
        #expect(try await count(.init(startDate: start, endDate: start + 1_000, notificationType: "REFUND")) == 3)
        #expect(try await count(.init(startDate: start, endDate: start + 1_000, transactionId: "4007")) == 1)
        #expect(try await count(.init(startDate: start, endDate: start + 1_000, onlyFailures: true)) == 1)
        #expect(try await count(.init(startDate: start + 10, endDate: start + 12)) == 2)
        let sandbox = try await harness.client.notificationHistoryPage(
            request, paginationToken: nil, bundleId: ServerAPIHarness.bundleId, environment: .sandbox,
            deadline: harness.deadline()
        ).result.get()
        #expect(sandbox.notificationHistory.isEmpty)
        let badToken = await harness.client.notificationHistoryPage(
            request, paginationToken: "bogus", bundleId: ServerAPIHarness.bundleId, environment: .production,
            deadline: harness.deadline())
        #expect(badToken.result.error?.kind == .invalidRequest && badToken.result.error?.errorCode == 4_000_014)
    }

    @Test func callsArePacedOnTimersAndRefusedWhenTheirTurnIsPastTheDeadline() async throws {
        // 5 per second (capacity 5): the sixth to eighth calls start 200, 400 and 600 ms later.
        let harness = try ServerAPIHarness(maxRPS: 5)
        let started = ContinuousClock.now
        let answers = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<8 {
                group.addTask {
                    await harness.client.transactionInfo(
                        transactionId: String(5_000 + index), bundleId: ServerAPIHarness.bundleId,
                        environment: .production, deadline: harness.deadline()
                    ).result.error == nil
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(answers == Array(repeating: true, count: 8))
        #expect(ContinuousClock.now - started >= .milliseconds(550))
        // One call every 2 s: after the first, a call that must start within 100 ms is refused without a request.
        let slow = try ServerAPIHarness(maxRPS: 0.5)
        let first = await slow.client.transactionInfo(
            transactionId: "5100", bundleId: ServerAPIHarness.bundleId, environment: .production,
            deadline: slow.deadline())
        #expect(first.result.error == nil)
        let late = await slow.client.transactionInfo(
            transactionId: "5101", bundleId: ServerAPIHarness.bundleId, environment: .production,
            deadline: slow.deadline(ms: 100))
        #expect(late.result.error?.kind == .retryable)
        #expect(late.result.error?.message.contains("APPLE_SERVER_API_MAX_RPS") == true)
        #expect(late.calls == 0)
        #expect(slow.fake.serverAPICalls(transaction: "5101") == (0, 0))
    }
}

extension Result {
    var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
