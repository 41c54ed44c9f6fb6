import AppStore
import FakeAppStore
import Foundation
@_spi(Testing) import HTTPClient
import ReceiptModel
import ServiceSupport
import TestSupport
import Testing

/// The real libcurl client, backend and verifier against the in-process fake App Store.
@Suite(.serialized) struct EndToEndTests {
    @Test func aProductionReceiptIsVerifiedInOneCall() async throws {
        let harness = try FakeAppStoreHarness()
        let receipt = FakeReceipt.valid(id: "prod-1", transactions: [FakeTransaction(id: "1001", product: "gems_100")])
        let verdict = try #require(await harness.verify(receipt, transactionId: "1001", productId: "gems_100").verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.environment == .production)
        #expect(verdict.bundleId == FakeAppStoreHarness.bundleId)
        #expect(verdict.appleStatus == 0)
        #expect(verdict.attempts == 1)
        #expect(verdict.transactions.map(\.creditKey) == ["apple:production:1001"])
        #expect(harness.fake.calls(receipt: "prod-1") == (1, 0))
    }

    @Test func aSandboxReceiptIsRedirectedFromProduction() async throws {
        let harness = try FakeAppStoreHarness()
        let receipt = FakeReceipt.valid(
            id: "sandbox-1", environment: "Sandbox",
            transactions: [FakeTransaction(id: "2001", product: "gems_100")])
        let verdict = try #require(await harness.verify(receipt).verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.environment == .sandbox)
        #expect(verdict.attempts == 2)
        #expect(verdict.transactions.map(\.creditKey) == ["apple:sandbox:2001"])
        #expect(harness.fake.calls(receipt: "sandbox-1") == (1, 1))
    }

    @Test func aSandboxReceiptIsRejectedByPolicy() async throws {
        let harness = try FakeAppStoreHarness(sandboxPolicy: .reject)
        let verdict = try #require(await harness.verify(FakeReceipt.valid(environment: "Sandbox")).verdict)
        #expect(verdict.reason == .sandboxNotAllowed)
        #expect(verdict.environment == .sandbox)
    }

    @Test func aProductionReceiptSentToTheSandboxIsRedirectedBack() async throws {
        let harness = try FakeAppStoreHarness()
        let receipt = FakeReceipt.valid(id: "prod-2")
        let answer = await harness.backendAnswer(receipt, start: .sandbox)
        guard case .receipt(let apple) = answer.result else {
            Issue.record("no receipt: \(answer)")
            return
        }
        #expect(apple.environment == .production)
        #expect(answer.calls == 2)
        #expect(harness.fake.calls(receipt: "prod-2") == (1, 1))
    }

    static let statusCases: [(status: Int, isRetryable: Bool?, expected: String)] = [
        (21000, nil, "config"), (21004, nil, "config"),
        (21001, nil, "invalid_receipt"), (21003, nil, "invalid_receipt"), (21010, nil, "invalid_receipt"),
        (21002, nil, "invalid_receipt"),
        (21005, nil, "unavailable"), (21009, nil, "unavailable"),
        (21100, true, "unavailable"), (21199, false, "invalid_receipt"), (21150, nil, "invalid_receipt"),
    ]

    @Test(arguments: statusCases)
    func everyStatusEndsAsTheTableSays(status: Int, isRetryable: Bool?, expected: String) async throws {
        let harness = try FakeAppStoreHarness()
        let id = "status-\(status)"
        let outcome = await harness.verify(FakeReceipt.status(status, id: id, isRetryable: isRetryable))
        let calls = harness.fake.calls(receipt: id)
        switch expected {
        case "config":
            #expect(outcome.isConfigurationError)
            #expect(outcome.failure?.reason == .configError)
            #expect(calls.production == 1, "configuration errors are never retried")
        case "invalid_receipt":
            let verdict = try #require(outcome.verdict)
            #expect(verdict.outcome == .rejected)
            #expect(verdict.reason == .invalidReceipt)
            #expect(verdict.appleStatus == status)
            let expectedCalls = status == 21002 ? harness.retryPolicy.malformedReceiptMaxAttempts : 1
            #expect(calls.production == expectedCalls)
        default:
            #expect(outcome.isUnavailable)
            #expect(outcome.failure?.reason == .appleUnavailable)
            #expect(outcome.failure?.appleStatus == status)
            #expect(calls.production == harness.retryPolicy.maxAttempts)
        }
        #expect(outcome.attempts == calls.production + calls.sandbox)
    }

    @Test func theHyphenatedRetryFlagIsHonoured() async throws {
        let harness = try FakeAppStoreHarness()
        let outcome = await harness.verify(
            FakeReceipt.status(
                21120, id: "hyphen", isRetryable: true,
                hyphenatedRetryFlag: true))
        #expect(outcome.isUnavailable)
        #expect(harness.fake.calls(receipt: "hyphen").production == harness.retryPolicy.maxAttempts)
    }

    @Test func refundedTransactionsAreRejected() async throws {
        let harness = try FakeAppStoreHarness()
        let receipt = FakeReceipt.valid(transactions: [
            FakeTransaction(id: "3001", product: "gems_100", refundedMs: 1_600_000_000_000, cancellationReason: "1"),
            FakeTransaction(id: "3002", product: "gems_100"),
        ])
        let refunded = try #require(await harness.verify(receipt, transactionId: "3001").verdict)
        #expect(refunded.reason == .refunded)
        #expect(refunded.transactions.first?.cancellationDateMs == 1_600_000_000_000)
        #expect(refunded.transactions.first?.cancellationReason == "1")
        let other = try #require(await harness.verify(receipt, transactionId: "3002").verdict)
        #expect(other.outcome == .verified)
    }

    @Test func aRefundOnlyInLatestReceiptInfoIsNotCreditable() async throws {
        let harness = try FakeAppStoreHarness()
        // Apple lists the subscription in latest_receipt_info too; there the refund shows.
        let receipt = FakeReceipt.encode(
            FakeReceiptScenario(
                scenario: .valid, id: "refund-latest",
                transactions: [
                    FakeTransaction(
                        id: "3101", product: "pro", expiresMs: 1_700_000_000_000, refundedMs: 1_650_000_000_000),
                    FakeTransaction(id: "3102", product: "pro", expiresMs: 1_800_000_000_000),
                ],
                subscription: true))
        let verdict = try #require(await harness.verify(receipt).verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.transactions.map(\.creditable) == [false, true])
        #expect(verdict.transactions.map(\.productType) == [.autoRenewable, .autoRenewable])
        #expect(verdict.transactions.allSatisfy { $0.appAccountToken == nil && $0.credit == nil })
        let refunded = try #require(await harness.verify(receipt, transactionId: "3101").verdict)
        #expect(refunded.reason == .refunded)
        #expect(refunded.transactions.map(\.creditable) == [false])
    }

    @Test func theEnvironmentIsWhatApplesBodySaysNotTheEndpoint() async throws {
        let registry = MetricsRegistry()
        let lines = CapturedLines()
        let harness = try FakeAppStoreHarness(metrics: registry, logger: Logger(label: "t", sink: lines))
        // The production endpoint answers 0, but the body says Sandbox: Apple's word wins.
        let lying = FakeReceipt.valid(
            id: "env-lie", transactions: [FakeTransaction(id: "5001", product: "gems_100")],
            reportedEnvironment: "Sandbox")
        let sandbox = try #require(await harness.verify(lying).verdict)
        #expect(sandbox.environment == .sandbox)
        #expect(sandbox.transactions.map(\.creditKey) == ["apple:sandbox:5001"])
        #expect(harness.fake.calls(receipt: "env-lie") == (1, 0))
        #expect(
            registry.render().contains(
                #"appstore_verifyreceipt_environment_disagreements_total{endpoint="Production",apple="Sandbox"} 1"#))
        #expect(lines.lines.contains { $0.contains("another environment than the endpoint") })

        // Without an environment in the body, the endpoint that answered decides.
        let silentSandbox = FakeReceipt.valid(
            id: "env-omit", environment: "Sandbox", transactions: [FakeTransaction(id: "5002", product: "gems_100")],
            reportedEnvironment: "omit")
        let fallback = try #require(await harness.verify(silentSandbox).verdict)
        #expect(fallback.environment == .sandbox)
        #expect(fallback.transactions.map(\.creditKey) == ["apple:sandbox:5002"])
        let silentProduction = FakeReceipt.valid(
            id: "env-omit-prod", transactions: [FakeTransaction(id: "5003", product: "gems_100")],
            reportedEnvironment: "omit")
        #expect(try #require(await harness.verify(silentProduction).verdict).environment == .production)
        #expect(
            registry.render().contains(
                #"appstore_verifyreceipt_environment_disagreements_total{endpoint="Sandbox",apple="Production"} 0"#))
    }

    @Test func aProductionURLPointedAtTheSandboxStillYieldsSandboxResults() async throws {
        let accepting = try FakeAppStoreHarness(productionURLIsTheSandboxOne: true)
        let receipt = FakeReceipt.valid(
            id: "misconfigured", environment: "Sandbox",
            transactions: [FakeTransaction(id: "6001", product: "gems_100")])
        let verdict = try #require(await accepting.verify(receipt).verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.environment == .sandbox)
        #expect(verdict.transactions.map(\.creditKey) == ["apple:sandbox:6001"])
        #expect(accepting.fake.calls(receipt: "misconfigured") == (0, 1), "only the sandbox endpoint was asked")

        let rejecting = try FakeAppStoreHarness(sandboxPolicy: .reject, productionURLIsTheSandboxOne: true)
        let refused = try #require(await rejecting.verify(receipt).verdict)
        #expect(refused.reason == .sandboxNotAllowed)
        #expect(refused.environment == .sandbox)
        // A production receipt cannot be verified there at all (the sandbox sends it back with 21008): no verdict.
        #expect(await rejecting.verify(FakeReceipt.valid(id: "prod-misconfigured")).isUnavailable)
    }

    @Test func aBurstOf21002ForEveryReceiptEndsWithoutVerdictsThenTheyVerify() async throws {
        let registry = MetricsRegistry()
        let harness = try FakeAppStoreHarness(
            retryPolicy: AppleCallRetryPolicy(maxAttempts: 4, malformedReceiptMaxAttempts: 2, baseDelayMs: 20, maxDelayMs: 50),
            malformedBurst: .init(windowSize: 20, minimumAnswers: 4, burstShare: 0.5, minimumReceipts: 3),
            metrics: registry)
        harness.fake.setOutage(mode: .status21002)
        let receipts = (0..<8).map {
            FakeReceipt.valid(id: "burst-\($0)", transactions: [FakeTransaction(id: "700\($0)", product: "gems_100")])
        }
        let during = await withTaskGroup(of: VerificationOutcome.self) { group in
            for receipt in receipts { group.addTask { await harness.verify(receipt) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let verdicts = during.compactMap(\.verdict)
        #expect(verdicts.isEmpty, "a 21002 during a burst reached a verdict: \(verdicts)")
        #expect(during.allSatisfy { $0.failure?.appleStatus == 21002 })
        #expect(registry.render().contains("appstore_21002_burst 1"))

        harness.fake.setOutage(mode: nil)
        for receipt in receipts {
            #expect(try #require(await harness.verify(receipt).verdict).outcome == .verified)
        }
    }

    @Test func severalTransactionsAreAllReturnedWithoutAnExpectation() async throws {
        let harness = try FakeAppStoreHarness()
        let receipt = FakeReceipt.valid(
            transactions: (1...5).map {
                FakeTransaction(id: "400\($0)", product: $0 == 5 ? "vip" : "gems_100")
            })
        let verdict = try #require(await harness.verify(receipt).verdict)
        #expect(verdict.transactions.map(\.transactionId) == ["4001", "4002", "4003", "4004", "4005"])
        #expect(
            try #require(await harness.verify(receipt, transactionId: "4009").verdict).reason == .transactionNotFound)
        #expect(
            try #require(await harness.verify(receipt, transactionId: "4001", productId: "vip").verdict).reason
                == .productMismatch)
        #expect(try #require(await harness.verify(FakeReceipt.valid(transactions: [])).verdict).reason == .noPurchases)
        #expect(
            try #require(await harness.verify(FakeReceipt.valid(bundleId: "com.other.app")).verdict).reason
                == .bundleMismatch)
    }

    @Test func aHugeReceiptOfMegabytesIsVerified() async throws {
        let harness = try FakeAppStoreHarness()
        let verdict = try #require(await harness.verify(FakeReceipt.huge(count: 6_000)).verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.transactions.count == 6_000)
        // The body the client received (in_app + latest_receipt_info, 6,000 each) was several megabytes.
        let answer = await harness.client.send(
            HTTPClientRequest(
                url: harness.fake.productionURL,
                body: Array(#"{"receipt-data":"\#(FakeReceipt.huge(count: 6_000))"}"#.utf8)))
        #expect(try answer.get().body.count > 5_000_000)
    }

    @Test func failuresForTheFirstAttemptsThenSuccess() async throws {
        let harness = try FakeAppStoreHarness()
        let byStatus = FakeReceipt.failingFirst(2, status: 21005, id: "flaky-status")
        let verdict = try #require(await harness.verify(byStatus).verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.attempts == 3)
        #expect(harness.fake.calls(receipt: "flaky-status") == (3, 0))

        let byHTTP = FakeReceipt.failingFirst(1, httpStatus: 502, id: "flaky-http")
        let second = try #require(await harness.verify(byHTTP).verdict)
        #expect(second.outcome == .verified)
        #expect(second.attempts == 2)
    }

    @Test func theRetryBudgetRunsOut() async throws {
        let harness = try FakeAppStoreHarness()
        let outcome = await harness.verify(FakeReceipt.failingFirst(10, id: "down"))
        let failure = try #require(outcome.failure)
        #expect(outcome.isUnavailable)
        #expect(failure.attempts == harness.retryPolicy.maxAttempts)
        #expect(failure.appleStatus == 21005)
        #expect(harness.fake.calls(receipt: "down").production == harness.retryPolicy.maxAttempts)
    }

    @Test func aHangingAppleTimesOut() async throws {
        let harness = try FakeAppStoreHarness(
            timeoutMs: 300,
            retryPolicy: AppleCallRetryPolicy(
                maxAttempts: 2, baseDelayMs: 1,
                maxDelayMs: 1))
        let started = ContinuousClock.now
        let outcome = await harness.verify(FakeReceipt.hang(id: "hang"))
        #expect(outcome.isUnavailable)
        #expect(outcome.failure?.message.contains("timeout") == true)
        #expect(harness.fake.calls(receipt: "hang").production == 2)
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test func theDeadlineBoundsTheWholeVerification() async throws {
        let harness = try FakeAppStoreHarness(timeoutMs: 10_000)
        let started = ContinuousClock.now
        let outcome = await harness.verify(FakeReceipt.hang(), deadlineMs: 400)
        #expect(outcome.isUnavailable)
        #expect(ContinuousClock.now - started < .seconds(3))
    }

    @Test func slowAnswersWithinTheTimeoutSucceed() async throws {
        let harness = try FakeAppStoreHarness(timeoutMs: 3_000)
        let verdict = try #require(await harness.verify(FakeReceipt.valid(delayMs: 300)).verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.attempts == 1)
    }

    @Test func nonJSON503IsRetriedThenUnavailable() async throws {
        let harness = try FakeAppStoreHarness()
        let outcome = await harness.verify(FakeReceipt.httpError(503, body: "html", id: "html-503"))
        let failure = try #require(outcome.failure)
        #expect(outcome.isUnavailable)
        #expect(failure.appleStatus == nil)
        #expect(failure.message.contains("HTTP 503"))
        #expect(harness.fake.calls(receipt: "html-503").production == harness.retryPolicy.maxAttempts)
        #expect(await harness.verify(FakeReceipt.httpError(500, body: "empty")).isUnavailable)
    }

    @Test func theOutageSwitchFailsEverythingUntilTurnedOff() async throws {
        let harness = try FakeAppStoreHarness()
        harness.fake.setOutage(true)
        #expect(await harness.verify(FakeReceipt.valid()).isUnavailable)
        harness.fake.setOutage(false)
        #expect(await harness.verify(FakeReceipt.valid()).verdict?.outcome == .verified)
    }

    @Test func theSharedSecretIsSentAndAWrongOneIsAConfigurationError() async throws {
        let right = try FakeAppStoreHarness(sharedSecret: "s3cr3t", fakeSharedSecret: "s3cr3t")
        #expect(await right.verify(FakeReceipt.valid()).verdict?.outcome == .verified)
        let wrong = try FakeAppStoreHarness(sharedSecret: "nope", fakeSharedSecret: "s3cr3t")
        let outcome = await wrong.verify(FakeReceipt.valid(id: "secret"))
        #expect(outcome.isConfigurationError)
        #expect(outcome.failure?.appleStatus == 21004)
        #expect(wrong.fake.calls(receipt: "secret").production == 1)
        let missing = try FakeAppStoreHarness(sharedSecret: nil, fakeSharedSecret: "s3cr3t")
        #expect(await missing.verify(FakeReceipt.valid()).isConfigurationError)
    }

    @Test func unknownReceiptDataIsMalformed() async throws {
        let harness = try FakeAppStoreHarness()
        let verdict = try #require(await harness.verify("bm90IGEgcmVjZWlwdA==").verdict)
        #expect(verdict.reason == .invalidReceipt)
        #expect(verdict.appleStatus == 21002)
    }

    @Test func aRefusedConnectionIsRetriedThenUnavailable() async throws {
        let closedPort = try Self.unusedPort()
        let harness = try FakeAppStoreHarness(productionURL: "http://127.0.0.1:\(closedPort)/verifyReceipt")
        let outcome = await harness.verify(FakeReceipt.valid())
        let failure = try #require(outcome.failure)
        #expect(outcome.isUnavailable)
        #expect(failure.attempts == harness.retryPolicy.maxAttempts)
        #expect(failure.message.contains("connection_failed"))
        let direct = await harness.client.send(
            HTTPClientRequest(
                url: "http://127.0.0.1:\(closedPort)/verifyReceipt", body: []))
        #expect(throws: HTTPClientError.self) { try direct.get() }
        if case .failure(let error) = direct { #expect(error.kind == .connectionFailed) }
    }

    @Test func moreRequestsThanTheWindowQueueAndAllComplete() async throws {
        let harness = try FakeAppStoreHarness(maxInFlight: 8)
        harness.fake.setLatency(fixedMs: 20, jitterMs: 5)
        let receipt = FakeReceipt.valid(id: "window")
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<120 {
                group.addTask { await harness.verify(receipt).verdict?.outcome == .verified }
            }
            var verified = 0
            for await ok in group where ok { verified += 1 }
            return verified
        }
        #expect(outcomes == 120)
        #expect(harness.fake.calls(receipt: "window").production == 120)
        #expect(harness.client.queuedRequests == 0)
    }

    @Test func closeFailsQueuedAndInFlightRequests() async throws {
        let harness = try FakeAppStoreHarness(maxInFlight: 1)
        let body = Array(#"{"receipt-data":"\#(FakeReceipt.hang(id: "close-1"))"}"#.utf8)
        async let first = harness.client.send(HTTPClientRequest(url: harness.fake.productionURL, body: body))
        async let second = harness.client.send(HTTPClientRequest(url: harness.fake.productionURL, body: body))
        // One request on the wire (the fake holds it), the other queued behind the one slot.
        #expect(
            await eventually {
                harness.fake.calls(receipt: "close-1").production == 1 && harness.client.queuedRequests == 1
            })
        harness.client.close()
        for result in await [first, second] {
            guard case .failure(let error) = result else {
                Issue.record("expected a failure")
                continue
            }
            #expect(error.kind == .shutdown)
        }
        let late = await harness.client.send(HTTPClientRequest(url: harness.fake.productionURL, body: body))
        if case .failure(let error) = late { #expect(error.kind == .shutdown) } else { Issue.record("accepted") }
    }

    @Test func idleConnectionsClosedByTheServerAreNotReused() async throws {
        let harness = try FakeAppStoreHarness()
        #expect(await harness.verify(FakeReceipt.valid()).verdict?.outcome == .verified)
        let oldPort = harness.fake.port
        let oldURL = harness.fake.productionURL
        // The keep-alive connection is idle in the client's pool; the server goes away and closes it.
        harness.fake.close()
        #expect(await eventually { !Self.acceptsConnections(port: oldPort) })
        let afterStop = await harness.client.send(HTTPClientRequest(url: harness.fake.productionURL, body: []))
        guard case .failure(let error) = afterStop else {
            Issue.record("a stopped server answered")
            return
        }
        #expect(error.kind == .connectionFailed)

        // The replacement listens on the old port (the HTTP server binds with SO_REUSEADDR), so the same URL
        // reaches it: a connection the client still held for that host and port would be tried first.
        let listen = ListenAddress(host: "127.0.0.1", port: oldPort)
        let replacement = FakeAppStoreServer(configuration: .init(listen: listen, threadCount: 1), logger: .quiet)
        try replacement.start()
        defer { replacement.close() }
        #expect(replacement.productionURL == oldURL)
        let body = Array(#"{"receipt-data":"\#(FakeReceipt.valid())"}"#.utf8)
        var opened: [Int] = []
        for _ in 0..<3 {
            let response = try await harness.client.send(HTTPClientRequest(url: oldURL, body: body)).get()
            #expect(response.status == 200)
            opened.append(response.connectionsOpened)
        }
        #expect(opened == [1, 0, 0])
        // Now a keep-alive connection to the replacement is certainly pooled: replace the server again on the same
        // port without any failing request in between. Reusing the dead connection would fail the next request.
        replacement.close()
        #expect(await eventually { !Self.acceptsConnections(port: oldPort) })
        let second = FakeAppStoreServer(configuration: .init(listen: listen, threadCount: 1), logger: .quiet)
        try second.start()
        defer { second.close() }
        opened = []
        for _ in 0..<3 {
            let response = try await harness.client.send(HTTPClientRequest(url: oldURL, body: body)).get()
            #expect(response.status == 200)
            opened.append(response.connectionsOpened)
        }
        #expect(opened == [1, 0, 0])  // a fresh connection to the new server, then kept alive
    }

    @Test func releasingTheClientFailsWhatIsInFlight() async throws {
        let fake = FakeAppStoreServer(
            configuration: .init(threadCount: 1, hangSeconds: 5),
            logger: .quiet)
        try fake.start()
        defer { fake.close() }
        let body = Array(#"{"receipt-data":"\#(FakeReceipt.hang())"}"#.utf8)
        let result = await withCheckedContinuation { continuation in
            var client: CurlHTTPClient? = try? CurlHTTPClient(configuration: HTTPClientConfiguration(maxInFlight: 4))
            client?.send(HTTPClientRequest(url: fake.productionURL, body: body)) { continuation.resume(returning: $0) }
            #expect(client != nil)
            client = nil  // deinit stops the loop: the hung request fails at once instead of leaking
        }
        guard case .failure(let error) = result else {
            Issue.record("a hung request succeeded")
            return
        }
        #expect(error.kind == .shutdown)
    }

    @Test func redirectsAreFollowedOnceNeverInALoop() async throws {
        let harness = try FakeAppStoreHarness()
        let outcome = await harness.verify(FakeReceipt.status(21007, id: "ping-pong"))
        #expect(outcome.isUnavailable)
        #expect(outcome.failure?.message.contains("redirected to itself") == true)
        // Production -> sandbox once; the sandbox's 21007 (to itself) is not followed, and retries start there.
        let calls = harness.fake.calls(receipt: "ping-pong")
        #expect(calls.production == 1)
        #expect(calls.sandbox == harness.retryPolicy.maxAttempts)
        #expect(outcome.attempts == 1 + harness.retryPolicy.maxAttempts)
    }

    @Test func responsesOverTheSizeLimitFail() async throws {
        let fake = FakeAppStoreServer(
            configuration: .init(threadCount: 1), logger: .quiet)
        try fake.start()
        defer { fake.close() }
        let client = try CurlHTTPClient(
            configuration: HTTPClientConfiguration(maxInFlight: 2, maxResponseBytes: 100_000))
        defer { client.close() }
        let body = Array(#"{"receipt-data":"\#(FakeReceipt.huge(count: 1_000))"}"#.utf8)
        let result = await client.send(HTTPClientRequest(url: fake.productionURL, body: body))
        guard case .failure(let error) = result else {
            Issue.record("an oversized response was accepted")
            return
        }
        #expect(error.kind == .responseTooLarge)
        // The client stays usable.
        let small = Array(#"{"receipt-data":"\#(FakeReceipt.valid())"}"#.utf8)
        #expect(try await client.send(HTTPClientRequest(url: fake.productionURL, body: small)).get().status == 200)
    }

    @Test func connectionsAreKeptAlive() async throws {
        let harness = try FakeAppStoreHarness()
        let body = Array(#"{"receipt-data":"\#(FakeReceipt.valid())"}"#.utf8)
        var opened: [Int] = []
        for _ in 0..<3 {
            let response = try await harness.client.send(HTTPClientRequest(url: harness.fake.productionURL, body: body))
                .get()
            #expect(response.httpVersion == "1.1")
            opened.append(response.connectionsOpened)
        }
        #expect(opened == [1, 0, 0])
    }

    @Test func callsAreCountedByEnvironmentAndOutcome() async throws {
        let fake = FakeAppStoreServer(configuration: .init(threadCount: 1), logger: .quiet)
        try fake.start()
        defer { fake.close() }
        let registry = MetricsRegistry()
        let settings = AppStoreSettings(
            endpoints: .init(production: fake.productionURL, sandbox: fake.sandboxURL),
            verdictPolicy: VerdictPolicy(allowedBundleIds: [FakeAppStoreHarness.bundleId]), maxInFlight: 8)
        let verifier = try ReceiptVerifier.verifyReceipt(settings: settings, logger: .quiet, metrics: registry)
        defer { verifier.close() }
        let outcome = await verifier.verify(
            receiptData: FakeReceipt.valid(environment: "Sandbox"), expectations: .init(),
            deadline: .now() + .seconds(10))
        #expect(outcome.verdict?.outcome == .verified)
        let text = registry.render()
        #expect(text.contains(#"appstore_verifyreceipt_calls_total{environment="Production",outcome="redirect"} 1"#))
        #expect(text.contains(#"appstore_verifyreceipt_calls_total{environment="Sandbox",outcome="valid"} 1"#))
        #expect(text.contains(#"appstore_verifications_total{outcome="verified"} 1"#))
        #expect(text.contains(#"appstore_verifyreceipt_call_duration_seconds_count{environment="Sandbox"} 1"#))
        #expect(text.contains("appstore_http_in_flight"))
    }

    @Test func timeQueuedForAWindowSlotCountsAgainstTheTimeout() async throws {
        let harness = try FakeAppStoreHarness(timeoutMs: 400, maxInFlight: 1)
        let hang = Array(#"{"receipt-data":"\#(FakeReceipt.hang(id: "slot-1"))"}"#.utf8)
        let valid = Array(#"{"receipt-data":"\#(FakeReceipt.valid())"}"#.utf8)
        let started = ContinuousClock.now
        async let blocker = harness.client.send(HTTPClientRequest(url: harness.fake.productionURL, body: hang))
        // The hung request holds the one slot (the fake has it) before the next is sent.
        #expect(await eventually { harness.fake.calls(receipt: "slot-1").production == 1 })
        // Waits ~350 ms behind the hung request: its own 200 ms are spent before it reaches the wire.
        let queued = await harness.client.send(
            HTTPClientRequest(url: harness.fake.productionURL, body: valid, timeoutMs: 200))
        guard case .failure(let error) = queued else { Issue.record("the queued request was not timed out"); return }
        #expect(error.kind == .timeout)
        #expect(error.message.contains("waiting for a free slot"))
        #expect(ContinuousClock.now - started < .milliseconds(1_500))
        if case .failure(let first) = await blocker { #expect(first.kind == .timeout) } else { Issue.record("hung") }
    }

    /// A port nothing listens on: bound, then released.
    static func unusedPort() throws -> UInt16 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Whether something listens on 127.0.0.1:`port`: the positive sign that a closed server is gone (a connect is
    /// refused) before the test goes on.
    static func acceptsConnections(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
