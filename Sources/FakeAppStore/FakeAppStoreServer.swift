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

    public init(configuration: Configuration, logger: Logger) {
        handler = FakeAppStoreHandler(
            latency: .init(fixedMs: max(0, configuration.latencyMs), jitterMs: max(0, configuration.jitterMs)),
            sharedSecret: configuration.sharedSecret, logger: logger)
        server = HTTPServer(
            configuration: HTTPServerConfiguration(
                listen: configuration.listen, maxBodyBytes: 32 << 20, threadCount: configuration.threadCount,
                idleTimeoutSeconds: 120, responseDeadline: .seconds(configuration.hangSeconds),
                stopGracePeriod: .milliseconds(200)),
            handler: handler, logger: logger.named("fake-appstore-http"))
    }

    /// Binds and serves. - Throws: `HTTPServerError` when the address cannot be bound.
    public func start() throws { try server.start() }

    /// Stops serving; idempotent.
    public func stop() { server.stop() }

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
