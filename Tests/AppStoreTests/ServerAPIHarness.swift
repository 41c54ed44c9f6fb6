import AppStore
import AppStoreServerAPI
import Crypto
import Dispatch
import FakeAppStore
import Foundation
import HTTPClient
import ReceiptModel
import ServiceSupport
import SignedData
import Testing
import TestPKI

/// An in-process fake App Store (Server API checking our minted API key, signing with a minted test PKI) and the
/// real libcurl client, API client, backends and verifier pointed at it.
final class ServerAPIHarness: Sendable {
    static let bundleId = "com.example.game"
    static let issuerId = "5c9a4e1d-0000-4000-8000-00000000c0de"
    static let keyId = "TESTKEY001"

    let pki: TestSigningPKI
    let apiKey: ECPrivateKey
    let fake: FakeAppStoreServer
    let http: CurlHTTPClient
    let tokens: AppStoreServerAPITokenProvider
    let pacer: ServerAPIPacer
    let client: AppStoreServerAPIClient
    let policy: VerdictPolicy

    /// - Parameters:
    ///   - fakeKey: the key the fake checks tokens against (default: ours; another key makes every token a 401).
    ///   - maxRPS: the pacing rate (high by default so tests are not paced unless they mean to).
    init(
        sandboxPolicy: SandboxPolicy = .accept, allowedBundleIds: Set<String> = [ServerAPIHarness.bundleId],
        fakeKey: ECPublicKey? = nil, maxRPS: Double = 10_000, timeoutMs: Int = 5_000,
        wallClockMs: @escaping @Sendable () -> Int64 = { SystemTime.wallMilliseconds() }
    ) throws {
        pki = try TestSigningPKI.mint()
        apiKey = try ECPrivateKey.generate(curve: .p256)
        fake = FakeAppStoreServer(
            configuration: .init(
                threadCount: 1, hangSeconds: 10,
                signing: FakeSigningIdentity(signer: pki.signer, rootCertificate: pki.rootCertificate),
                apiPublicKey: try fakeKey ?? apiKey.publicKey, apiIssuerId: Self.issuerId, apiKeyId: Self.keyId),
            logger: .quiet)
        try fake.start()
        http = try CurlHTTPClient(
            configuration: HTTPClientConfiguration(maxInFlight: 64, requestTimeoutMs: timeoutMs, completionConcurrency: 2))
        tokens = AppStoreServerAPITokenProvider(
            credentials: try AppStoreServerAPICredentials(issuerId: Self.issuerId, keyId: Self.keyId, privateKey: apiKey))
        pacer = ServerAPIPacer(pacing: ServerAPIPacing(productionRatePerSecond: maxRPS))
        client = AppStoreServerAPIClient(
            http: http,
            endpoints: .init(production: fake.serverAPIProductionURL, sandbox: fake.serverAPISandboxURL),
            tokens: tokens, pacer: pacer, requestTimeoutMs: timeoutMs, logger: .quiet, wallClockMs: wallClockMs)
        policy = VerdictPolicy(allowedBundleIds: allowedBundleIds, sandboxPolicy: sandboxPolicy)
    }

    deinit {
        http.close()
        fake.close()
    }

    /// The Server API backend over this harness (no client: no API credentials).
    func backend(
        confirm: Bool = true, withClient: Bool = true, receiptRoots: [Certificate]? = nil, maxHistoryPages: Int = 50,
        notFoundMemory: TransactionNotFoundMemory.Limits = TransactionNotFoundMemory.Limits(),
        clock: any ServiceClock = DispatchClock(), metrics: MetricsRegistry? = nil,
        signedData: AppleSignedDataVerifier? = nil
    ) -> ServerAPIBackend {
        ServerAPIBackend(
            client: withClient ? client : nil, signedData: signedData ?? pki.verifier(),
            receipts: receiptRoots.map { AppReceiptVerifier(trustedRoots: $0) },
            configuration: .init(
                policy: policy, confirmSignedTransactions: confirm, maxHistoryPages: maxHistoryPages,
                notFoundMemory: notFoundMemory),
            logger: .quiet, metrics: metrics, clock: clock)
    }

    /// A verifier over `backend` with quick in-round retries.
    func verifier(
        _ backend: any ReceiptVerificationBackend,
        retryPolicy: AppleCallRetryPolicy = AppleCallRetryPolicy(maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20)
    ) -> ReceiptVerifier {
        ReceiptVerifier(backend: backend, policy: policy, retryPolicy: retryPolicy, requestTimeoutMs: 5_000, logger: .quiet)
    }

    func verify(
        _ proof: PurchaseProof, with backend: any ReceiptVerificationBackend,
        expectations: VerificationExpectations = VerificationExpectations(), deadlineMs: Int = 10_000
    ) async -> VerificationOutcome {
        await verifier(backend).verify(proof: proof, expectations: expectations, deadline: .now() + .milliseconds(deadlineMs))
    }

    func answer(_ proof: PurchaseProof, with backend: ServerAPIBackend, start: AppStoreEnvironment = .production)
        async -> BackendAnswer
    {
        await withCheckedContinuation { continuation in
            backend.verify(
                BackendRequest(proof: proof, startEnvironment: start, timeoutMs: 5_000, deadline: .now() + .seconds(10))
            ) { continuation.resume(returning: $0) }
        }
    }

    /// A signed transaction as a device holds it, signed by the fake's PKI.
    func signedTransaction(_ id: String) throws -> String {
        try #require(try fake.signedTransaction(id: id))
    }

    /// A transaction payload signed by our PKI (optionally with a defect).
    func sign(_ payload: String, defect: TestSigningPKI.Defect? = nil) throws -> String {
        try pki.sign(payload: Array(payload.utf8), defect: defect)
    }

    func payload(
        id: String, environment: String = "Production", bundleId: String = ServerAPIHarness.bundleId,
        product: String = "gems_100", signedDateMs: Int64? = nil
    ) -> String {
        """
        {"transactionId":"\(id)","originalTransactionId":"\(id)","bundleId":"\(bundleId)","productId":"\(product)",\
        "purchaseDate":1700000000000,"quantity":1,"type":"Consumable","inAppOwnershipType":"PURCHASED",\
        "signedDate":\(signedDateMs ?? pki.signedDateMs),"environment":"\(environment)"}
        """
    }

    func deadline(ms: Int = 10_000) -> DispatchTime { .now() + .milliseconds(ms) }
}
