import Crypto
import ServiceSupport
import SignedData

/// The App Store Server API and signed-data settings (CONTRACT names), read and checked at start: the key file is
/// read and parsed, the root certificate files loaded, so a wrong setting stops the service instead of failing
/// submissions later.
public struct ServerAPISettings: Sendable, CustomStringConvertible {
    /// `SIGNED_TRANSACTION_CONFIRM`.
    public enum Confirmation: String, Sendable, CaseIterable {
        /// Also ask Get Transaction Info about every locally verified signed transaction (Apple's current state).
        case always
        /// Rely on the local signature check alone (`source: signed_transaction`).
        case never
    }

    /// `RECEIPT_BACKEND`.
    public enum ReceiptBackend: String, Sendable, CaseIterable {
        /// Apple's legacy verifyReceipt endpoint.
        case verifyReceipt = "verify-receipt"
        /// The receipt's PKCS#7 signature checked locally, its transaction ids read, then Get Transaction History.
        case serverAPI = "server-api"
    }

    /// `APPLE_ISSUER_ID`, `APPLE_KEY_ID`, `APPLE_PRIVATE_KEY_FILE`: all three set, or nil (the API is not used).
    public var credentials: AppStoreServerAPICredentials?
    /// `APPLE_PRIVATE_KEY_FILE` (for the description only; the key itself is in `credentials`).
    public var privateKeyPath: String?
    /// `APPLE_SERVER_API_URL`, `APPLE_SERVER_API_SANDBOX_URL`.
    public var endpoints: AppStoreServerAPIClient.Endpoints
    /// `APPLE_ROOT_CERTIFICATES`: the only roots signed transactions (and notifications) may chain to.
    public var rootCertificatePaths: [String]
    public var rootCertificates: [Certificate]
    /// `APPLE_RECEIPT_ROOT_CERTIFICATES`: roots of legacy receipts' PKCS#7 signatures (loaded only with
    /// `RECEIPT_BACKEND=server-api`; empty otherwise).
    public var receiptRootCertificatePaths: [String]
    public var receiptRootCertificates: [Certificate]
    /// `APPLE_APP_APPLE_ID`: the app's Apple id (notifications of another app are refused).
    public var appAppleId: Int64?
    /// `APPLE_SERVER_API_MAX_RPS`: this process's production pace per endpoint (the sandbox gets a tenth).
    public var maxRequestsPerSecond: Double
    public var signedTransactionConfirm: Confirmation
    public var receiptBackend: ReceiptBackend

    public static let defaultProductionURL = "https://api.storekit.apple.com"
    public static let defaultSandboxURL = "https://api.storekit-sandbox.apple.com"
    /// Apple's published per-app production limit of Get Transaction Info and Get Transaction History.
    public static let defaultMaxRequestsPerSecond = ServerAPIEndpoint.transactionInfo.publishedProductionLimitPerSecond

    public init(
        credentials: AppStoreServerAPICredentials? = nil, privateKeyPath: String? = nil,
        endpoints: AppStoreServerAPIClient.Endpoints = .init(
            production: ServerAPISettings.defaultProductionURL, sandbox: ServerAPISettings.defaultSandboxURL),
        rootCertificatePaths: [String] = [], rootCertificates: [Certificate],
        receiptRootCertificatePaths: [String] = [], receiptRootCertificates: [Certificate] = [],
        appAppleId: Int64? = nil, maxRequestsPerSecond: Double = ServerAPISettings.defaultMaxRequestsPerSecond,
        signedTransactionConfirm: Confirmation? = nil, receiptBackend: ReceiptBackend = .verifyReceipt
    ) {
        self.credentials = credentials
        self.privateKeyPath = privateKeyPath
        self.endpoints = endpoints
        self.rootCertificatePaths = rootCertificatePaths
        self.rootCertificates = rootCertificates
        self.receiptRootCertificatePaths = receiptRootCertificatePaths
        self.receiptRootCertificates = receiptRootCertificates
        self.appAppleId = appAppleId
        self.maxRequestsPerSecond = maxRequestsPerSecond
        self.signedTransactionConfirm = signedTransactionConfirm ?? (credentials == nil ? .never : .always)
        self.receiptBackend = receiptBackend
    }

    /// True when the three API key settings are set: Get Transaction Info and History can be called.
    public var hasCredentials: Bool { credentials != nil }

    /// A command-line tool's API key; nil after logging that the three key settings are required and `why` (the
    /// tool exits 2).
    public func toolCredentials(why: String, logger: Logger) -> AppStoreServerAPICredentials? {
        guard let credentials else {
            logger.error("APPLE_ISSUER_ID, APPLE_KEY_ID and APPLE_PRIVATE_KEY_FILE are required: " + why)
            return nil
        }
        return credentials
    }

    static let credentialVariables = ["APPLE_ISSUER_ID", "APPLE_KEY_ID", "APPLE_PRIVATE_KEY_FILE"]

    /// Reads and checks the settings.
    ///
    /// - Throws: `ConfigurationError` naming the first variable that is missing, inconsistent or unreadable (key
    ///   file, certificate files).
    public static func fromEnvironment(_ settings: Settings) throws(ConfigurationError) -> ServerAPISettings {
        let set = credentialVariables.filter { settings.string($0) != nil }
        var credentials: AppStoreServerAPICredentials?
        let keyPath = settings.string("APPLE_PRIVATE_KEY_FILE")
        if !set.isEmpty {
            guard set.count == credentialVariables.count else {
                let missing = credentialVariables.filter { !set.contains($0) }
                throw ConfigurationError(
                    variable: missing[0],
                    problem: "is required when \(set.joined(separator: " and ")) \(set.count == 1 ? "is" : "are") set: "
                        + "APPLE_ISSUER_ID, APPLE_KEY_ID and APPLE_PRIVATE_KEY_FILE go together (all three, or none)")
            }
            do {
                credentials = try AppStoreServerAPICredentials(
                    issuerId: try settings.required("APPLE_ISSUER_ID"), keyId: try settings.required("APPLE_KEY_ID"),
                    privateKeyPath: keyPath ?? "")
            } catch let error as CryptoError {
                throw ConfigurationError(
                    variable: "APPLE_PRIVATE_KEY_FILE",
                    problem: "\(error.message) (the In-App Purchase key from App Store Connect, a .p8 PEM file)")
            } catch let error as ConfigurationError {
                throw error
            } catch {
                throw ConfigurationError(variable: "APPLE_PRIVATE_KEY_FILE", problem: "\(error)")
            }
        }
        let production = try url(settings, "APPLE_SERVER_API_URL", default: defaultProductionURL)
        let sandbox = try url(settings, "APPLE_SERVER_API_SANDBOX_URL", default: defaultSandboxURL)

        let rootPaths = try certificatePaths(
            settings, "APPLE_ROOT_CERTIFICATES", shipped: AppleRootCertificates.defaultSignedDataRootsPath,
            shippedName: AppleRootCertificates.signedDataRootFileName)
        let roots = try load(rootPaths, variable: "APPLE_ROOT_CERTIFICATES")

        let backendName = try settings.choice(
            "RECEIPT_BACKEND", from: ReceiptBackend.allCases.map(\.rawValue),
            default: ReceiptBackend.verifyReceipt.rawValue)
        let receiptBackend = ReceiptBackend(rawValue: backendName) ?? .verifyReceipt
        if receiptBackend == .serverAPI, credentials == nil {
            throw ConfigurationError(
                variable: "RECEIPT_BACKEND",
                problem: "server-api needs the App Store Server API key: set APPLE_ISSUER_ID, APPLE_KEY_ID and "
                    + "APPLE_PRIVATE_KEY_FILE, or use verify-receipt")
        }
        var receiptRootPaths: [String] = []
        var receiptRoots: [Certificate] = []
        if receiptBackend == .serverAPI {
            receiptRootPaths = try certificatePaths(
                settings, "APPLE_RECEIPT_ROOT_CERTIFICATES", shipped: AppleRootCertificates.defaultReceiptRootsPath,
                shippedName: AppleRootCertificates.receiptRootFileName)
            receiptRoots = try load(receiptRootPaths, variable: "APPLE_RECEIPT_ROOT_CERTIFICATES")
        }

        var appAppleId: Int64?
        if let raw = settings.string("APPLE_APP_APPLE_ID") {
            guard let value = Int64(raw), value > 0 else {
                throw ConfigurationError(
                    variable: "APPLE_APP_APPLE_ID", problem: "'\(raw)' is not the app's numeric Apple id")
            }
            appAppleId = value
        }
        let maxRPS = try settings.double("APPLE_SERVER_API_MAX_RPS", default: defaultMaxRequestsPerSecond)
        guard maxRPS > 0, maxRPS <= 1_000_000 else {
            throw ConfigurationError(
                variable: "APPLE_SERVER_API_MAX_RPS",
                problem: "\(maxRPS) is not a rate in (0, 1000000] requests per second per endpoint")
        }
        let confirmDefault: Confirmation = credentials == nil ? .never : .always
        let confirmName = try settings.choice(
            "SIGNED_TRANSACTION_CONFIRM", from: Confirmation.allCases.map(\.rawValue), default: confirmDefault.rawValue)
        let confirm = Confirmation(rawValue: confirmName) ?? confirmDefault
        if confirm == .always, credentials == nil {
            throw ConfigurationError(
                variable: "SIGNED_TRANSACTION_CONFIRM",
                problem: "always needs the App Store Server API key: set APPLE_ISSUER_ID, APPLE_KEY_ID and "
                    + "APPLE_PRIVATE_KEY_FILE, or use never")
        }
        return ServerAPISettings(
            credentials: credentials, privateKeyPath: credentials == nil ? nil : keyPath,
            endpoints: .init(production: production, sandbox: sandbox), rootCertificatePaths: rootPaths,
            rootCertificates: roots, receiptRootCertificatePaths: receiptRootPaths,
            receiptRootCertificates: receiptRoots, appAppleId: appAppleId, maxRequestsPerSecond: maxRPS,
            signedTransactionConfirm: confirm, receiptBackend: receiptBackend)
    }

    /// `https://...`, or `http://` to a loopback host only (tests, `make dev`): the bearer token must never cross a
    /// network in clear text.
    static func url(_ settings: Settings, _ name: String, default value: String) throws(ConfigurationError) -> String {
        let url = settings.string(name, default: value)
        let lower = url.lowercased()
        guard !url.contains(" "), url.count > 8 else {
            throw ConfigurationError(variable: name, problem: "'\(url)' is not an https URL")
        }
        if lower.hasPrefix("https://") { return url }
        if lower.hasPrefix("http://") {
            let rest = lower.dropFirst("http://".count)
            let authority = rest.prefix { $0 != "/" }
            let host: Substring
            if authority.hasPrefix("[") {
                host = authority.prefix { $0 != "]" }.dropFirst()
            } else {
                host = authority.prefix { $0 != ":" }
            }
            let octets = host.split(separator: ".", omittingEmptySubsequences: false)
            let loopbackIPv4 = octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
            if host == "localhost" || host == "::1" || loopbackIPv4 { return url }
            throw ConfigurationError(
                variable: name,
                problem: "'\(url)' is plain http to a non-loopback host; the API's bearer token needs https")
        }
        throw ConfigurationError(variable: name, problem: "'\(url)' is not an https URL")
    }

    private static func certificatePaths(
        _ settings: Settings, _ name: String, shipped: String?, shippedName: String
    ) throws(ConfigurationError) -> [String] {
        if let raw = settings.string(name) {
            let paths = AppleRootCertificates.paths(fromSetting: raw)
            guard !paths.isEmpty else {
                throw ConfigurationError(variable: name, problem: "lists no certificate file")
            }
            return paths
        }
        guard let shipped else {
            throw ConfigurationError(
                variable: name,
                problem: "is not set and the shipped \(shippedName) was not found next to the executable "
                    + "(certificates/) nor in share/receipt-verification/certificates: set it to the file(s)")
        }
        return [shipped]
    }

    private static func load(_ paths: [String], variable: String) throws(ConfigurationError) -> [Certificate] {
        do {
            let certificates = try AppleRootCertificates.load(paths: paths)
            guard !certificates.isEmpty else {
                throw ConfigurationError(variable: variable, problem: "the files hold no certificate")
            }
            return certificates
        } catch let error as CryptoError {
            throw ConfigurationError(variable: variable, problem: error.message)
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(variable: variable, problem: "\(error)")
        }
    }

    /// For logs: the key file's path, never its contents; issuer and key ids are not secret.
    public var description: String {
        "server_api=" + (credentials.map { "key \($0.keyId) of issuer \($0.issuerId)" } ?? "no credentials")
            + " server_api_url=\(endpoints.production) server_api_sandbox_url=\(endpoints.sandbox)"
            + " signed_transaction_confirm=\(signedTransactionConfirm.rawValue)"
            + " receipt_backend=\(receiptBackend.rawValue) max_rps=\(maxRequestsPerSecond)"
            + " root_certificates=\(rootCertificatePaths.joined(separator: ","))"
    }
}
