import AppStoreServerAPI
import Glibc
import ServiceSupport
import SignedData

/// `receipt-admin`'s settings: the App Store Server API's `APPLE_*` as the verifier reads them (key, URLs, pace,
/// `APPLE_ROOT_CERTIFICATES` for the answers' signed data), `ALLOWED_BUNDLE_IDS` for the app, and optionally the
/// ledger's HTTP API (`LEDGER_URL`, `LEDGER_API_KEY`).
public struct AdminSettings: Sendable {
    public var serverAPI: ServerAPISettings
    public var credentials: AppStoreServerAPICredentials
    /// `APPLE_TIMEOUT_MS`: the longest one HTTP request may take.
    public var timeoutMs: Int
    public var allowedBundleIds: [String]
    public var ledger: LedgerSettings?
    /// `APPLE_REVOCATION_CHECK` and `APPLE_OCSP_*`, as the verifier reads them: Apple's answers are signed data
    /// like any other, checked for revocation the same way.
    public var revocation: RevocationSettings
    /// `APPLE_CA_BUNDLE`: CAs to trust instead of the system store (an https OCSP responder with a private CA).
    public var caBundlePath: String?

    public init(
        serverAPI: ServerAPISettings, credentials: AppStoreServerAPICredentials, timeoutMs: Int,
        allowedBundleIds: [String], ledger: LedgerSettings?, revocation: RevocationSettings = RevocationSettings(),
        caBundlePath: String? = nil
    ) {
        self.serverAPI = serverAPI
        self.credentials = credentials
        self.timeoutMs = timeoutMs
        self.allowedBundleIds = allowedBundleIds
        self.ledger = ledger
        self.revocation = revocation
        self.caBundlePath = caBundlePath
    }

    /// - Parameter ledgerURL: `--ledger-url`, which stands for `LEDGER_URL`.
    /// - Throws: `ConfigurationError` naming the first variable that is missing or wrong.
    public static func fromEnvironment(_ settings: Settings, ledgerURL: String? = nil) throws(ConfigurationError)
        -> AdminSettings
    {
        let serverAPI = try ServerAPISettings.fromEnvironment(settings)
        guard let credentials = serverAPI.credentials else {
            throw ConfigurationError(
                variable: "APPLE_ISSUER_ID",
                problem: "APPLE_ISSUER_ID, APPLE_KEY_ID and APPLE_PRIVATE_KEY_FILE are required: every subcommand is "
                    + "an App Store Server API call")
        }
        let timeoutMs = try settings.int("APPLE_TIMEOUT_MS", default: 30_000, range: 1...600_000)
        let caBundle = settings.string("APPLE_CA_BUNDLE")
        if let caBundle, access(caBundle, R_OK) != 0 {
            throw ConfigurationError(variable: "APPLE_CA_BUNDLE", problem: "'\(caBundle)' is not a readable file")
        }
        return AdminSettings(
            serverAPI: serverAPI, credentials: credentials, timeoutMs: timeoutMs,
            allowedBundleIds: settings.list("ALLOWED_BUNDLE_IDS"),
            ledger: try LedgerSettings.fromEnvironment(settings, url: ledgerURL),
            revocation: try RevocationSettings.fromEnvironment(settings), caBundlePath: caBundle)
    }

    /// The app to ask about: `--bundle-id`, else the one app `ALLOWED_BUNDLE_IDS` names.
    public func bundleId(_ option: String?) throws(ConfigurationError) -> String {
        if let option { return option }
        guard allowedBundleIds.count == 1 else {
            throw ConfigurationError(
                variable: "ALLOWED_BUNDLE_IDS",
                problem: "names \(allowedBundleIds.count) apps: pass --bundle-id (the token's bid is the app asked "
                    + "about)")
        }
        return allowedBundleIds[0]
    }
}

/// The ledger's HTTP API: `GET /v1/purchases/{credit_key}`, and `PUT /v1/users/{user_id}/app-account-token` (the
/// one write, `set-account-token --user`).
public struct LedgerSettings: Sendable, Equatable {
    /// `LEDGER_URL`, e.g. `http://receipt-ledger:8081`, without a trailing slash.
    public var url: String
    /// `LEDGER_API_KEY`: one of the ledger's `LEDGER_API_KEYS` (the key part), sent as a bearer token.
    public var apiKey: String?

    public init(url: String, apiKey: String?) {
        var url = url
        while url.hasSuffix("/") { url.removeLast() }
        self.url = url
        self.apiKey = apiKey
    }

    /// nil when neither `url` (`--ledger-url`) nor `LEDGER_URL` is set.
    static func fromEnvironment(_ settings: Settings, url option: String? = nil) throws(ConfigurationError)
        -> LedgerSettings?
    {
        guard let url = option ?? settings.string("LEDGER_URL") else {
            if settings.string("LEDGER_API_KEY") != nil {
                throw ConfigurationError(variable: "LEDGER_URL", problem: "is required when LEDGER_API_KEY is set")
            }
            return nil
        }
        guard isURL(url) else {
            throw ConfigurationError(variable: "LEDGER_URL", problem: "'\(url)' is not an http(s) URL")
        }
        return LedgerSettings(url: url, apiKey: settings.string("LEDGER_API_KEY"))
    }

    /// An http(s) URL as `LEDGER_URL` and `--ledger-url` take it.
    static func isURL(_ url: String) -> Bool {
        let lower = url.lowercased()
        return (lower.hasPrefix("http://") || lower.hasPrefix("https://")) && !url.contains(" ") && url.count > 8
    }
}
