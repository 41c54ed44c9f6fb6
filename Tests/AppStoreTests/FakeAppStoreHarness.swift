import AppStore
import Dispatch
import FakeAppStore
import Foundation
import HTTPClient
import ReceiptModel
import ServiceSupport
import Synchronization

/// An in-process fake App Store plus the real libcurl client, backend and verifier pointed at it.
final class FakeAppStoreHarness: Sendable {
    static let bundleId = "com.example.game"
    let fake: FakeAppStoreServer
    let client: CurlHTTPClient
    let backend: VerifyReceiptBackend
    let verifier: ReceiptVerifier
    let retryPolicy: AppleCallRetryPolicy

    init(
        timeoutMs: Int = 3_000,
        retryPolicy: AppleCallRetryPolicy = AppleCallRetryPolicy(
            maxAttempts: 3, malformedReceiptMaxAttempts: 2, baseDelayMs: 5, maxDelayMs: 20),
        sandboxPolicy: SandboxPolicy = .accept, sharedSecret: String? = nil, fakeSharedSecret: String? = nil,
        maxInFlight: Int = 64, productionURL: String? = nil, productionURLIsTheSandboxOne: Bool = false,
        malformedBurst: MalformedReceiptBurstDetector.Configuration = .init(), metrics: MetricsRegistry? = nil,
        logger: Logger = .quiet
    ) throws {
        fake = FakeAppStoreServer(
            configuration: .init(sharedSecret: fakeSharedSecret, threadCount: 1, hangSeconds: 10), logger: .quiet)
        try fake.start()
        client = try CurlHTTPClient(
            configuration: HTTPClientConfiguration(
                maxInFlight: maxInFlight, requestTimeoutMs: timeoutMs, completionConcurrency: 2))
        // A misconfiguration on purpose: APPLE_VERIFY_RECEIPT_URL set to Apple's sandbox host.
        let production = productionURLIsTheSandboxOne ? fake.sandboxURL : productionURL ?? fake.productionURL
        backend = VerifyReceiptBackend(
            client: client, endpoints: .init(production: production, sandbox: fake.sandboxURL),
            sharedSecret: sharedSecret, metrics: metrics, logger: logger)
        self.retryPolicy = retryPolicy
        verifier = ReceiptVerifier(
            backend: backend,
            policy: VerdictPolicy(allowedBundleIds: [Self.bundleId], sandboxPolicy: sandboxPolicy),
            retryPolicy: retryPolicy, requestTimeoutMs: timeoutMs, malformedBurst: malformedBurst, logger: logger,
            metrics: metrics)
    }

    deinit {
        client.close()
        fake.close()
    }

    func verify(
        _ receipt: String, transactionId: String? = nil, productId: String? = nil, deadlineMs: Int = 15_000
    ) async -> VerificationOutcome {
        await verifier.verify(
            receiptData: receipt,
            expectations: VerificationExpectations(transactionId: transactionId, productId: productId),
            deadline: .now() + .milliseconds(deadlineMs))
    }

    func backendAnswer(_ receipt: String, start: AppStoreEnvironment) async -> BackendAnswer {
        await withCheckedContinuation { continuation in
            backend.verify(BackendRequest(receiptData: receipt, startEnvironment: start)) {
                continuation.resume(returning: $0)
            }
        }
    }
}

/// Log lines tests do not want on the console (expected errors such as 21004).
struct DiscardingSink: LogSink {
    func write(line: String) {}
}

/// Log lines, kept for assertions.
final class CapturedLines: LogSink {
    private let captured = Locked<[String]>([])
    func write(line: String) { captured.withLock { $0.append(line) } }
    var lines: [String] { captured.withLock { $0 } }
}

extension Logger {
    static let quiet = Logger(label: "appstore-test", sink: DiscardingSink())
}

extension VerificationOutcome {
    var verdict: ReceiptVerdict? {
        if case .verdict(let verdict) = self { return verdict }
        return nil
    }

    var failure: VerificationFailure? {
        switch self {
        case .verdict: nil
        case .unavailable(let failure), .configurationError(let failure): failure
        }
    }

    var isUnavailable: Bool {
        if case .unavailable = self { return true }
        return false
    }

    var isConfigurationError: Bool {
        if case .configurationError = self { return true }
        return false
    }
}
