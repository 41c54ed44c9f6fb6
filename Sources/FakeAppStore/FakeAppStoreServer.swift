import HTTPServer
import ServiceSupport

/// The fake App Store, in process: verifyReceipt at `/verifyReceipt` (production) and `/sandbox/verifyReceipt`,
/// admin endpoints under `/admin/`. See `README.md`.
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
        /// Where the notification signing keys live (`FakeSigningKeys`); nil mints a set in memory.
        public var signingDirectory: String?
        /// Waits between notification delivery attempts after failures (Apple's 1, 12, 24, 48, 72 h by default).
        public var notificationRetrySchedule: [Duration] = FakeNotificationSender.appleRetrySchedule

        public init(
            listen: ListenAddress = ListenAddress(host: "127.0.0.1", port: 0), latencyMs: Int = 0, jitterMs: Int = 0,
            sharedSecret: String? = nil, threadCount: Int = 2, hangSeconds: Int = 60
        ) {
            self.listen = listen
            self.latencyMs = latencyMs
            self.jitterMs = jitterMs
            self.sharedSecret = sharedSecret
            self.threadCount = threadCount
            self.hangSeconds = hangSeconds
        }
    }

    private let server: HTTPServer
    private let handler: FakeAppStoreHandler
    /// The keys notifications are signed with; nil when they could not be read or minted (logged; the notification
    /// endpoints then answer 404).
    public let signingKeys: FakeSigningKeys?

    public init(configuration: Configuration, logger: Logger) {
        let notifications = Self.notificationAdmin(configuration, logger: logger)
        signingKeys = notifications?.keys
        handler = FakeAppStoreHandler(
            latency: .init(fixedMs: max(0, configuration.latencyMs), jitterMs: max(0, configuration.jitterMs)),
            sharedSecret: configuration.sharedSecret, logger: logger, notifications: notifications)
        server = HTTPServer(
            configuration: HTTPServerConfiguration(
                listen: configuration.listen, maxBodyBytes: 32 << 20, threadCount: configuration.threadCount,
                idleTimeoutSeconds: 120, responseDeadline: .seconds(configuration.hangSeconds),
                stopGracePeriod: .milliseconds(200)),
            handler: handler, logger: logger.named("fake-appstore-http"))
    }

    private static func notificationAdmin(_ configuration: Configuration, logger: Logger) -> FakeNotificationAdmin? {
        do {
            let keys =
                if let directory = configuration.signingDirectory {
                    try FakeSigningKeys.loadOrMint(directory: directory)
                } else {
                    try FakeSigningKeys.mint()
                }
            let sender = try FakeNotificationSender(
                history: FakeNotificationHistory(), logger: logger.named("fake-appstore-notifications"))
            return FakeNotificationAdmin(
                keys: keys, sender: sender, retrySchedule: configuration.notificationRetrySchedule, logger: logger)
        } catch {
            logger.error("notifications disabled: cannot set up the signing keys", ["error": .string("\(error)")])
            return nil
        }
    }

    /// Every notification signed so far, with its delivery attempts.
    public var notificationHistory: FakeNotificationHistory? { handler.notifications?.history }

    /// Binds and serves. - Throws: `HTTPServerError` when the address cannot be bound.
    public func start() throws { try server.start() }

    /// Stops serving (and retrying notification deliveries); idempotent.
    public func stop() {
        server.stop()
        handler.notifications?.sender.shutdown()
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
}
