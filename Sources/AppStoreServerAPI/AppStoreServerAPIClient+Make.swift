import HTTPClient
import ServiceSupport
import SignedData

extension AppStoreServerAPIClient {
    /// The HTTP client of a process that calls the App Store Server API now and then (the tools, the ledger's refund
    /// responder): a few requests in flight, each bounded by `requestTimeoutMs`.
    public static func occasionalHTTPConfiguration(requestTimeoutMs: Int) -> HTTPClientConfiguration {
        HTTPClientConfiguration(maxInFlight: 4, requestTimeoutMs: requestTimeoutMs)
    }

    /// The client `settings` describe, the one way every process makes one (the verifier, the ledger's refund
    /// responder, receipt-reconcile, the backfill, receipt-admin): `credentials` sign its tokens, and its own pacer
    /// keeps `settings.maxRequestsPerSecond` per endpoint (a tenth of it in the sandbox).
    ///
    /// - Parameters:
    ///   - http: the libcurl client it sends with (the verifier shares its own with verifyReceipt); `close()` closes
    ///     it.
    ///   - requestTimeoutMs: the longest one request may take (`APPLE_TIMEOUT_MS`).
    ///   - logger: the process's; the client logs as `server-api`.
    public static func make(
        settings: ServerAPISettings, credentials: AppStoreServerAPICredentials, http: CurlHTTPClient,
        requestTimeoutMs: Int = 30_000, logger: Logger, metrics: MetricsRegistry? = nil
    ) -> AppStoreServerAPIClient {
        AppStoreServerAPIClient(
            http: http, endpoints: settings.endpoints, tokens: AppStoreServerAPITokenProvider(credentials: credentials),
            pacer: ServerAPIPacer(pacing: ServerAPIPacing(productionRatePerSecond: settings.maxRequestsPerSecond)),
            requestTimeoutMs: requestTimeoutMs, logger: logger.named("server-api"), metrics: metrics)
    }

    /// As `make(settings:credentials:http:...)`, over an HTTP client of its own
    /// (`occasionalHTTPConfiguration(requestTimeoutMs:)`, exporting no `appstore_http_*` metrics: those are the
    /// verifier's), which `close()` closes.
    ///
    /// - Throws: `HTTPClientError` when the HTTP client cannot be set up.
    public static func make(
        settings: ServerAPISettings, credentials: AppStoreServerAPICredentials, requestTimeoutMs: Int = 30_000,
        logger: Logger, metrics: MetricsRegistry? = nil
    ) throws(HTTPClientError) -> AppStoreServerAPIClient {
        let http = try CurlHTTPClient(configuration: occasionalHTTPConfiguration(requestTimeoutMs: requestTimeoutMs))
        return make(
            settings: settings, credentials: credentials, http: http, requestTimeoutMs: requestTimeoutMs,
            logger: logger, metrics: metrics)
    }

    /// A command-line tool's client (receipt-notifications-backfill, receipt-reconcile): `make` over its own HTTP
    /// client; nil after logging why the HTTP client cannot be made (the tool exits 1).
    public static func forTool(
        settings: ServerAPISettings, credentials: AppStoreServerAPICredentials, requestTimeoutMs: Int, logger: Logger
    ) -> AppStoreServerAPIClient? {
        do {
            return try make(
                settings: settings, credentials: credentials, requestTimeoutMs: requestTimeoutMs, logger: logger)
        } catch {
            logger.error("cannot create the HTTP client", ["error": .string("\(error)")])
            return nil
        }
    }
}
