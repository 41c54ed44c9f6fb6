import Catalog
import Foundation
import HTTPClient
import ReceiptModel
import ServiceSupport

/// Everything the App Store client reads from the environment (names from the CONTRACT, plus a few optional
/// tuning variables documented here).
public struct AppStoreSettings: Sendable, Equatable, CustomStringConvertible {
    public var endpoints: VerifyReceiptBackend.Endpoints
    /// `APPLE_SHARED_SECRET`; nil when unset. Never logged (see `description`).
    public var sharedSecret: String?
    /// `APPLE_TIMEOUT_MS` (default 30000): per-request timeout.
    public var timeoutMs: Int
    /// `ALLOWED_BUNDLE_IDS` (required), `SANDBOX_POLICY` (accept | reject, default accept) and
    /// `APP_ACCOUNT_TOKEN_POLICY` (check | require, default check).
    public var verdictPolicy: VerdictPolicy
    /// `VERIFIER_MAX_IN_FLIGHT` (default 512).
    public var maxInFlight: Int
    /// `APPLE_CA_BUNDLE`: a PEM file of CAs to trust instead of the system store (private test CAs).
    public var caBundlePath: String?
    /// `APPLE_EXCLUDE_OLD_TRANSACTIONS` (default false).
    public var excludeOldTransactions: Bool
    /// `APPLE_RETRY_MAX_ATTEMPTS` (4), `APPLE_RETRY_21002_MAX_ATTEMPTS` (3), `APPLE_RETRY_BASE_DELAY_MS` (250),
    /// `APPLE_RETRY_MAX_DELAY_MS` (5000).
    public var retryPolicy: AppleCallRetryPolicy
    /// `APPLE_21002_BURST_WINDOW` (100), `APPLE_21002_BURST_MIN_ANSWERS` (20), `APPLE_21002_BURST_SHARE` (0.5),
    /// `APPLE_21002_BURST_MIN_RECEIPTS` (5): when 21002 answers are an Apple outage.
    public var malformedBurst: MalformedReceiptBurstDetector.Configuration
    /// `PRODUCT_CATALOG_FILE`: the product catalog's path (validated when read from the environment); nil when unset.
    public var productCatalogFile: String?

    public init(
        endpoints: VerifyReceiptBackend.Endpoints = .init(
            production: AppStoreSettings.defaultProductionURL, sandbox: AppStoreSettings.defaultSandboxURL),
        sharedSecret: String? = nil, timeoutMs: Int = 30_000, verdictPolicy: VerdictPolicy, maxInFlight: Int = 512,
        caBundlePath: String? = nil, excludeOldTransactions: Bool = false, retryPolicy: AppleCallRetryPolicy = AppleCallRetryPolicy(),
        malformedBurst: MalformedReceiptBurstDetector.Configuration = .init(), productCatalogFile: String? = nil
    ) {
        self.endpoints = endpoints
        self.sharedSecret = sharedSecret
        self.timeoutMs = timeoutMs
        self.verdictPolicy = verdictPolicy
        self.maxInFlight = maxInFlight
        self.caBundlePath = caBundlePath
        self.excludeOldTransactions = excludeOldTransactions
        self.retryPolicy = retryPolicy
        self.malformedBurst = malformedBurst
        self.productCatalogFile = productCatalogFile
    }

    public static let defaultProductionURL = "https://buy.itunes.apple.com/verifyReceipt"
    public static let defaultSandboxURL = "https://sandbox.itunes.apple.com/verifyReceipt"

    /// Reads and validates the settings. `PRODUCT_CATALOG_FILE`, when set, is read and parsed once here, so that a
    /// missing or invalid catalog stops the process at start with a message naming it.
    /// - Throws: `ConfigurationError` naming the first variable that is missing or invalid.
    public static func fromEnvironment(_ settings: Settings) throws(ConfigurationError) -> AppStoreSettings {
        let production = try url(settings, "APPLE_VERIFY_RECEIPT_URL", default: defaultProductionURL)
        let sandbox = try url(settings, "APPLE_SANDBOX_VERIFY_RECEIPT_URL", default: defaultSandboxURL)
        let timeoutMs = try settings.int("APPLE_TIMEOUT_MS", default: 30_000, range: 1...600_000)
        let bundleIds = settings.list("ALLOWED_BUNDLE_IDS")
        guard !bundleIds.isEmpty else {
            throw ConfigurationError(
                variable: "ALLOWED_BUNDLE_IDS", problem: "is required: the comma-separated bundle ids of your apps")
        }
        let sandboxPolicy = try settings.choice(
            "SANDBOX_POLICY", from: SandboxPolicy.allCases.map(\.rawValue), default: SandboxPolicy.accept.rawValue)
        let tokenPolicy = try settings.choice(
            "APP_ACCOUNT_TOKEN_POLICY", from: AppAccountTokenPolicy.allCases.map(\.rawValue),
            default: AppAccountTokenPolicy.check.rawValue)
        let maxInFlight = try settings.int("VERIFIER_MAX_IN_FLIGHT", default: 512, range: 1...100_000)
        let caBundle = settings.string("APPLE_CA_BUNDLE")
        if let caBundle, access(caBundle, R_OK) != 0 {
            throw ConfigurationError(variable: "APPLE_CA_BUNDLE", problem: "'\(caBundle)' is not a readable file")
        }
        let excludeOld = try settings.bool("APPLE_EXCLUDE_OLD_TRANSACTIONS", default: false)
        let maxAttempts = try settings.int("APPLE_RETRY_MAX_ATTEMPTS", default: 4, range: 1...100)
        let malformedMax = try settings.int("APPLE_RETRY_21002_MAX_ATTEMPTS", default: 3, range: 1...100)
        let baseDelay = try settings.int("APPLE_RETRY_BASE_DELAY_MS", default: 250, range: 0...600_000)
        let maxDelay = try settings.int("APPLE_RETRY_MAX_DELAY_MS", default: 5_000, range: 0...3_600_000)
        guard maxDelay >= baseDelay else {
            throw ConfigurationError(
                variable: "APPLE_RETRY_MAX_DELAY_MS", problem: "\(maxDelay) is below APPLE_RETRY_BASE_DELAY_MS")
        }
        let burstWindow = try settings.int("APPLE_21002_BURST_WINDOW", default: 100, range: 1...100_000)
        let burstMinimum = try settings.int(
            "APPLE_21002_BURST_MIN_ANSWERS", default: min(20, burstWindow), range: 1...burstWindow)
        let burstShare = try settings.double("APPLE_21002_BURST_SHARE", default: 0.5)
        guard burstShare > 0, burstShare <= 1 else {
            throw ConfigurationError(variable: "APPLE_21002_BURST_SHARE", problem: "\(burstShare) is not in (0, 1]")
        }
        let burstReceipts = try settings.int("APPLE_21002_BURST_MIN_RECEIPTS", default: 5, range: 1...100_000)
        let catalogFile = settings.string("PRODUCT_CATALOG_FILE")
        if let catalogFile {
            do {
                _ = try ProductCatalogFile.read(catalogFile)
            } catch {
                throw ConfigurationError(variable: "PRODUCT_CATALOG_FILE", problem: "'\(catalogFile)' \(error.problem)")
            }
        }
        return AppStoreSettings(
            endpoints: .init(production: production, sandbox: sandbox),
            sharedSecret: settings.string("APPLE_SHARED_SECRET"), timeoutMs: timeoutMs,
            verdictPolicy: VerdictPolicy(
                allowedBundleIds: Set(bundleIds), sandboxPolicy: SandboxPolicy(rawValue: sandboxPolicy) ?? .accept,
                appAccountTokenPolicy: AppAccountTokenPolicy(rawValue: tokenPolicy) ?? .check),
            maxInFlight: maxInFlight, caBundlePath: caBundle, excludeOldTransactions: excludeOld,
            retryPolicy: AppleCallRetryPolicy(
                maxAttempts: maxAttempts, malformedReceiptMaxAttempts: malformedMax, baseDelayMs: baseDelay,
                maxDelayMs: maxDelay),
            malformedBurst: MalformedReceiptBurstDetector.Configuration(
                windowSize: burstWindow, minimumAnswers: burstMinimum, burstShare: burstShare,
                minimumReceipts: burstReceipts),
            productCatalogFile: catalogFile)
    }

    /// An Apple endpoint: `https://`, or `http://` only on a loopback host (the fake App Store in tests and
    /// `make dev`): a verdict must never rest on an answer anyone on the network path could have written.
    private static func url(_ settings: Settings, _ name: String, default value: String) throws(ConfigurationError)
        -> String
    {
        let url = settings.string(name, default: value)
        let lower = url.lowercased()
        let isHTTPS = lower.hasPrefix("https://")
        guard isHTTPS || lower.hasPrefix("http://"), url.count > 8, !url.contains(" ") else {
            throw ConfigurationError(variable: name, problem: "'\(url)' is not an https:// URL")
        }
        guard isHTTPS || isLoopback(host: host(ofHTTPURL: url)) else {
            throw ConfigurationError(
                variable: name,
                problem: "'\(url)' is plain http on a host that is not loopback: Apple's answers decide money, use "
                    + "https:// (http:// is accepted only on 127.0.0.0/8, ::1 and localhost, for the fake App Store)")
        }
        return url
    }

    /// The host of an `http://` URL: between the scheme and the first `/`, `?` or `#`, without user info or port;
    /// an IPv6 literal without its brackets.
    static func host(ofHTTPURL url: String) -> String {
        var authority = Substring(url.dropFirst("http://".count))
        if let end = authority.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            authority = authority[..<end]
        }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return String(authority) }
            return String(authority[authority.index(after: authority.startIndex)..<close])
        }
        if let colon = authority.firstIndex(of: ":") { authority = authority[..<colon] }
        return String(authority)
    }

    /// 127.0.0.0/8 (dotted decimal), `::1` (any spelling of it) or `localhost`.
    static func isLoopback(host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host == "localhost." { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        if octets.count == 4, octets[0] == "127",
            octets.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } && UInt8($0) != nil })
        {
            return true
        }
        var address = in6_addr()
        if inet_pton(AF_INET6, host, &address) == 1 {
            var loopback = in6_addr()
            _ = inet_pton(AF_INET6, "::1", &loopback)
            return withUnsafeBytes(of: &address) { a in withUnsafeBytes(of: &loopback) { b in a.elementsEqual(b) } }
        }
        return false
    }

    /// The libcurl client's configuration.
    public var httpClientConfiguration: HTTPClientConfiguration {
        HTTPClientConfiguration(maxInFlight: maxInFlight, requestTimeoutMs: timeoutMs, caBundlePath: caBundlePath)
    }

    /// For logs: the shared secret is shown only as set or not.
    public var description: String {
        "production=\(endpoints.production) sandbox=\(endpoints.sandbox) shared_secret="
            + (sharedSecret == nil ? "unset" : "set") + " timeout_ms=\(timeoutMs) max_in_flight=\(maxInFlight) "
            + "allowed_bundle_ids=\(verdictPolicy.allowedBundleIds.sorted().joined(separator: ",")) "
            + "sandbox_policy=\(verdictPolicy.sandboxPolicy.rawValue) "
            + "app_account_token_policy=\(verdictPolicy.appAccountTokenPolicy.rawValue) "
            + "product_catalog_file=\(productCatalogFile ?? "unset")"
    }
}
