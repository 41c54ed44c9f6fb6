import Crypto
import HTTPServer
import ServiceSupport
import SignedData

/// The fake App Store, in process: verifyReceipt at `/verifyReceipt` (production) and `/sandbox/verifyReceipt`,
/// the App Store Server API at `/inApps/...` and `/sandbox/inApps/...`, admin endpoints under `/admin/`. See
/// `README.md`.
public final class FakeAppStoreServer: Sendable {
    public struct Configuration: Sendable {
        public var listen: ListenAddress
        /// Added to every verifyReceipt answer: `latencyMs` plus a uniform random 0...`jitterMs`.
        public var latencyMs: Int
        public var jitterMs: Int
        /// When set, requests whose `password` differs are answered 21004.
        public var sharedSecret: String?
        public var threadCount: Int
        /// How long a hung request is held before the server answers it 503 itself.
        public var hangSeconds: Int
        /// What signs the Server API's transactions; nil mints a test PKI at start (`signingRootCertificate`).
        public var signing: FakeSigningIdentity?
        /// The key Server API bearer tokens must be signed with; nil checks their claims only.
        public var apiPublicKey: ECPublicKey?
        /// When set, tokens must carry this `iss` / `kid`.
        public var apiIssuerId: String?
        public var apiKeyId: String?
        /// The app and product of unregistered numeric transaction ids.
        public var defaultBundleId: String
        public var defaultProductId: String
        /// Waits between notification delivery attempts after failures (Apple's 1, 12, 24, 48, 72 h by default).
        public var notificationRetrySchedule: [Duration] = FakeNotificationSender.appleRetrySchedule
        /// Where Request a Test Notification sends its TEST notification (App Store Connect's production or sandbox
        /// server URL; one for both here); nil: Apple's 4040007 until `POST /admin/notification-url` sets one.
        public var notificationURL: String?

        public init(
            listen: ListenAddress = ListenAddress(host: "127.0.0.1", port: 0), latencyMs: Int = 0, jitterMs: Int = 0,
            sharedSecret: String? = nil, threadCount: Int = 2, hangSeconds: Int = 60,
            signing: FakeSigningIdentity? = nil, apiPublicKey: ECPublicKey? = nil, apiIssuerId: String? = nil,
            apiKeyId: String? = nil, defaultBundleId: String = "com.example.game", defaultProductId: String = "gems_100"
        ) {
            self.listen = listen
            self.latencyMs = latencyMs
            self.jitterMs = jitterMs
            self.sharedSecret = sharedSecret
            self.threadCount = threadCount
            self.hangSeconds = hangSeconds
            self.signing = signing
            self.apiPublicKey = apiPublicKey
            self.apiIssuerId = apiIssuerId
            self.apiKeyId = apiKeyId
            self.defaultBundleId = defaultBundleId
            self.defaultProductId = defaultProductId
        }
    }

    private let server: HTTPServer
    private let handler: FakeAppStoreHandler

    /// Without `configuration.signing` a test PKI is minted here (a failure to mint one, which only a broken
    /// OpenSSL could cause, stops the process: the fake is a test tool).
    public init(configuration: Configuration, logger: Logger) {
        let signing: FakeSigningIdentity
        if let given = configuration.signing {
            signing = given
        } else {
            do {
                signing = try FakeSigningIdentity.mint()
            } catch {
                fatalError("the fake App Store cannot mint its test signing PKI: \(error.message)")
            }
        }
        let serverAPI = FakeServerAPI(
            signing: signing,
            bearer: FakeBearerVerifier(
                publicKey: configuration.apiPublicKey, issuerId: configuration.apiIssuerId,
                keyId: configuration.apiKeyId),
            defaultBundleId: configuration.defaultBundleId, defaultProductId: configuration.defaultProductId,
            logger: logger.named("fake-server-api"))
        let notifications = Self.notificationAdmin(
            configuration, signing: signing, serverAPI: serverAPI, logger: logger)
        serverAPI.testNotifications.attach(notifications, url: configuration.notificationURL)
        handler = FakeAppStoreHandler(
            latency: .init(fixedMs: max(0, configuration.latencyMs), jitterMs: max(0, configuration.jitterMs)),
            sharedSecret: configuration.sharedSecret, serverAPI: serverAPI, logger: logger,
            notifications: notifications)
        server = HTTPServer(
            configuration: HTTPServerConfiguration(
                listen: configuration.listen, maxBodyBytes: 32 << 20, threadCount: configuration.threadCount,
                idleTimeoutSeconds: 120, responseDeadline: .seconds(configuration.hangSeconds),
                stopGracePeriod: .milliseconds(200)),
            handler: handler, logger: logger.named("fake-appstore-http"))
    }

    /// The notification sender: signs with the Server API's identity, and every notification it signs (with its
    /// delivery attempts as they happen) is also a Get Notification History entry. nil only when its HTTP client
    /// cannot be created (logged; the notification endpoints then answer 404).
    private static func notificationAdmin(
        _ configuration: Configuration, signing: FakeSigningIdentity, serverAPI: FakeServerAPI, logger: Logger
    ) -> FakeNotificationAdmin? {
        let history = FakeNotificationHistory { change in
            switch change {
            case .added(let entry):
                serverAPI.appendNotification(
                    signedPayload: entry.signedPayload, environment: entry.environment,
                    sendAttemptsJSON: entry.sendAttemptsJSON)
            case .attempted(let entry):
                serverAPI.updateNotificationAttempts(
                    signedPayload: entry.signedPayload, sendAttemptsJSON: entry.sendAttemptsJSON)
            }
        }
        do {
            let sender = try FakeNotificationSender(history: history, logger: logger.named("fake-appstore-notifications"))
            return FakeNotificationAdmin(
                signing: signing, sender: sender, retrySchedule: configuration.notificationRetrySchedule, logger: logger)
        } catch {
            logger.error("notifications disabled: cannot create their HTTP client", ["error": .string("\(error)")])
            return nil
        }
    }

    /// Every notification signed so far, with its delivery attempts.
    public var notificationHistory: FakeNotificationHistory? { handler.notifications?.history }

    /// Binds and serves. - Throws: `HTTPServerError` when the address cannot be bound.
    public func start() throws { try server.start() }

    /// Stops serving (and retrying notification deliveries); idempotent.
    public func close() {
        server.close()
        handler.notifications?.sender.close()
    }

    public var port: UInt16 { server.port }
    /// `http://127.0.0.1:<port>`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }
    public var productionURL: String { baseURL + "/verifyReceipt" }
    public var sandboxURL: String { baseURL + "/sandbox/verifyReceipt" }

    /// Calls received for `receiptData` (or a counters key), by environment.
    public func calls(receipt: String) -> (production: Int, sandbox: Int) {
        let calls = handler.counters.calls(receipt: handler.counterKey(forQuery: receipt))
        return (calls.production, calls.sandbox)
    }

    /// Switches the global outage on (every verifyReceipt call answers 503 HTML) or off.
    public func setOutage(_ on: Bool) { handler.outage = on ? .http503 : nil }

    /// Switches the global outage on in `mode`, or off with nil.
    public func setOutage(mode: FakeOutageMode?) { handler.outage = mode }

    public func setLatency(fixedMs: Int, jitterMs: Int) {
        handler.latency = .init(fixedMs: max(0, fixedMs), jitterMs: max(0, jitterMs))
    }

    // MARK: App Store Server API

    /// `APPLE_SERVER_API_URL` for this fake.
    public var serverAPIProductionURL: String { baseURL }
    /// `APPLE_SERVER_API_SANDBOX_URL` for this fake.
    public var serverAPISandboxURL: String { baseURL + "/sandbox" }

    /// The root the fake's signed transactions chain to (`APPLE_ROOT_CERTIFICATES`).
    public var signingRootCertificate: Certificate { handler.serverAPI.signing.rootCertificate }

    /// Registers (or replaces) a transaction the Server API answers about.
    public func register(_ transaction: FakeServerTransaction) {
        handler.serverAPI.register(transaction)
    }

    /// The signed transaction a device would hold for `id` (signed now), or nil for an unknown id.
    public func signedTransaction(id: String) throws -> String? {
        try handler.serverAPI.signedTransaction(id: id)
    }

    /// Registers (or replaces) an app transaction Get App Transaction Info answers about.
    public func register(_ appTransaction: FakeAppTransaction) {
        handler.serverAPI.register(appTransaction)
    }

    /// The app transaction a device would hold for `id` (`AppTransaction.shared`, signed now), or nil for an unknown
    /// id.
    public func signedAppTransaction(id: String) throws -> String? {
        try handler.serverAPI.signedAppTransaction(id: id)
    }

    /// Get App Transaction Info calls received about app transaction `id`, by environment.
    public func serverAPICalls(appTransaction id: String) -> (production: Int, sandbox: Int) {
        let calls = handler.serverAPI.appTransactionCalls(id)
        return (calls.production, calls.sandbox)
    }

    /// Whether Finish Transaction was called for transaction `id` in `environment` (`Production` or `Sandbox`).
    public func isFinished(transaction id: String, environment: String = "Production") -> Bool {
        handler.serverAPI.isFinished(transaction: id, environment: environment)
    }

    /// Server API calls received about transaction `id`, by environment (401s before the id was read excluded).
    public func serverAPICalls(transaction id: String) -> (production: Int, sandbox: Int) {
        let calls = handler.serverAPI.calls(transaction: id)
        return (calls.production, calls.sandbox)
    }

    /// The key to check bearer tokens with, from a file: an App Store Server API `.p8` private key, or a PEM public
    /// key.
    public static func apiPublicKey(path: String) throws -> ECPublicKey {
        try FakeBearerVerifier.loadKey(path: path)
    }

    /// Where Request a Test Notification sends (nil: none configured, Apple's 4040007).
    public var notificationURL: String? {
        get { handler.serverAPI.testNotifications.url }
        set { handler.serverAPI.testNotifications.url = newValue }
    }

    /// Server API requests refused with 401 (bad or missing bearer token).
    public var serverAPIUnauthorizedCount: Int { handler.serverAPI.totals.unauthorized }

    /// Adds an entry to Get Notification History in `environment` (`Production` or `Sandbox`), as if Apple had
    /// sent the notification; `sendAttemptsJSON` is Apple's `sendAttempts` array (default: one
    /// `SUCCESS` now).
    public func appendNotificationHistory(
        signedPayload: String, environment: String = "Production", sendAttemptsJSON: String? = nil
    ) {
        handler.serverAPI.appendNotification(
            signedPayload: signedPayload, environment: environment, sendAttemptsJSON: sendAttemptsJSON)
    }
}
