import AppStoreServerAPI
import Catalog
import Crypto
import HTTPClient
import ServiceSupport
import SignedData

extension ReceiptVerifier {
    /// The verifier the settings describe for every proof: one libcurl client (one multi loop, one in-flight window)
    /// shared by verifyReceipt and the App Store Server API, a `BackendRouter` over both backends, and the policies.
    ///
    /// - Parameter signedData: the Server API backend's signed-data verifier (the caller keeps it to read the chains
    ///   in use); nil for one trusting `serverAPI.rootCertificates` without revocation checks.
    /// - Throws: `HTTPClientError` when the HTTP client cannot be set up.
    public static func make(
        settings: AppStoreSettings, serverAPI: ServerAPISettings, catalog: (any ProductCatalogSource)? = nil,
        logger: Logger, metrics: MetricsRegistry? = nil, signedData: AppleSignedDataVerifier? = nil
    ) throws(HTTPClientError) -> ReceiptVerifier {
        let http = try CurlHTTPClient(configuration: settings.httpClientConfiguration, metrics: metrics)
        let verifyReceipt = VerifyReceiptBackend(
            client: http, endpoints: settings.endpoints, sharedSecret: settings.sharedSecret,
            excludeOldTransactions: settings.excludeOldTransactions, metrics: metrics, logger: logger)
        let client = serverAPI.credentials.map { credentials in
            AppStoreServerAPIClient.make(
                settings: serverAPI, credentials: credentials, http: http, requestTimeoutMs: settings.timeoutMs,
                logger: logger, metrics: metrics)
        }
        let receipts: AppReceiptVerifier? =
            serverAPI.receiptBackend == .serverAPI
            ? AppReceiptVerifier(trustedRoots: serverAPI.receiptRootCertificates) : nil
        let serverAPIBackend = ServerAPIBackend(
            client: client, signedData: signedData ?? AppleSignedDataVerifier(trustedRoots: serverAPI.rootCertificates),
            receipts: receipts,
            configuration: ServerAPIBackend.Configuration(
                policy: settings.verdictPolicy,
                confirmSignedTransactions: serverAPI.signedTransactionConfirm == .always),
            logger: logger.named("server-api"), metrics: metrics)
        return ReceiptVerifier(
            backend: BackendRouter(
                verifyReceipt: verifyReceipt, serverAPI: serverAPIBackend, receiptBackend: serverAPI.receiptBackend),
            policy: settings.verdictPolicy, catalog: catalog, retryPolicy: settings.retryPolicy,
            requestTimeoutMs: settings.timeoutMs, malformedBurst: settings.malformedBurst, logger: logger,
            metrics: metrics)
    }
}
