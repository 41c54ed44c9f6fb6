import CMicroHTTPD
import ServiceSupport
import Synchronization

/// What the C callbacks reach through their `void *` context: the handler, limits and request accounting.
///
/// Lives as long as the `HTTPServer` that owns it, which outlives the daemon (`close` runs `MHD_stop_daemon` before
/// the server can be released), so the unretained pointer handed to libmicrohttpd is always valid.
final class ServerCore: Sendable {
    let configuration: HTTPServerConfiguration
    let handler: any HTTPHandler
    let logger: Logger
    let onResponse: (@Sendable (HTTPResponseEvent) -> Void)?
    /// Answers 503 for requests whose handler has not responded within the response deadline.
    let sweeper: DeadlineSweeper<WeakRequestContext>
    /// Open connections and their head and body deadlines.
    let connections: ConnectionSweeper
    /// Connections handed to the daemons, for the limits `ConnectionAcceptor` applies across them.
    let connectionCounts = ConnectionCounts()
    /// libmicrohttpd's own log lines (one per malformed request or abandoned connection) are capped by this.
    let logBudget = LogBudget(linesPerSecond: 10)
    /// `configuration.requestHeadTimeout`, `bodyTimeout` and `idleTimeoutSeconds` in nanoseconds.
    let headTimeoutNanoseconds: UInt64
    let bodyTimeoutNanoseconds: UInt64
    let idleTimeoutNanoseconds: UInt64

    /// Set when `close` begins: new requests are answered 503 with `Connection: close`.
    let isStopping = Atomic<Bool>(false)
    /// Requests between their first access-handler call and libmicrohttpd's completion notification.
    let activeRequests = Atomic<Int>(0)
    /// Requests handed to the handler whose response has not been queued yet.
    let awaitingResponse = Atomic<Int>(0)
    /// Body bytes reserved by requests still being received (bounded by `maxBufferedBodyBytes`).
    let bufferedBodyBytes = Atomic<Int>(0)
    /// Bodies answered `busyResponse` because they did not fit under `maxBufferedBodyBytes`.
    let busyRefusals = Atomic<Int>(0)

    init(
        configuration: HTTPServerConfiguration, handler: any HTTPHandler, logger: Logger,
        onResponse: (@Sendable (HTTPResponseEvent) -> Void)?
    ) {
        self.configuration = configuration
        self.handler = handler
        self.logger = logger
        self.onResponse = onResponse
        let idleTimeout = Duration.seconds(max(configuration.idleTimeoutSeconds, 1))
        self.headTimeoutNanoseconds = max(configuration.requestHeadTimeout.clampedNanoseconds, 1)
        self.bodyTimeoutNanoseconds = max(configuration.bodyTimeout.clampedNanoseconds, 1)
        self.idleTimeoutNanoseconds = idleTimeout.clampedNanoseconds
        self.connections = ConnectionSweeper(
            tick: ConnectionSweeper.tick(for: [configuration.requestHeadTimeout, configuration.bodyTimeout, idleTimeout]),
            logger: logger)
        let deadlineSeconds = Double(configuration.responseDeadline.clampedNanoseconds) / 1e9
        // libmicrohttpd never times out a suspended connection, so the server enforces the deadline itself. Every
        // request gets the same deadline: one FIFO and a periodic sweep, overshooting a deadline by at most ~5% (never
        // more than 100 ms, never below 5 ms).
        let deadline = max(configuration.responseDeadline, .milliseconds(1))
        let tick = min(max(deadline / 20, .milliseconds(5)), .milliseconds(100))
        self.sweeper = DeadlineSweeper(timeout: deadline, tick: tick, label: "http-server-deadlines") { expired in
            // `respond` checks and resumes under the context's lock, so a request answered or completed meanwhile is
            // left alone.
            for context in expired.compactMap(\.context) where context.isAwaitingResponse {
                let answered = context.respond(configuration.deadlineResponse, origin: .deadline)
                if answered {
                    logger.warning(
                        "handler did not respond before the deadline",
                        ["method": .string(context.method), "path": .string(context.path),
                         "deadline_seconds": .double(deadlineSeconds)])
                }
            }
        }
    }

    /// Whether `count` body bytes would fit under `maxBufferedBodyBytes` now (nothing is reserved).
    func bodyBytesFit(_ count: Int) -> Bool {
        count <= configuration.maxBufferedBodyBytes - bufferedBodyBytes.load(ordering: .relaxed)
    }

    /// Reserves `count` body bytes under `maxBufferedBodyBytes`; false (nothing reserved) when they do not fit.
    func reserveBodyBytes(_ count: Int) -> Bool {
        guard count > 0 else { return true }
        let limit = configuration.maxBufferedBodyBytes
        var current = bufferedBodyBytes.load(ordering: .relaxed)
        while true {
            guard count <= limit - current else { return false }
            let (exchanged, original) = bufferedBodyBytes.compareExchange(
                expected: current, desired: current + count, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Gives back what `context` reserved (connection thread of `context`).
    func releaseBodyBytes(of context: RequestContext) {
        guard context.reservedBodyBytes > 0 else { return }
        bufferedBodyBytes.subtract(context.reservedBodyBytes, ordering: .relaxed)
        context.reservedBodyBytes = 0
    }

    func record(_ context: RequestContext, status: Int, origin: HTTPResponseOrigin) {
        guard let onResponse else { return }
        onResponse(
            HTTPResponseEvent(
                method: context.method, path: context.path, status: status, origin: origin,
                durationSeconds: SystemTime.secondsSince(context.startedAt)))
    }
}

/// Responses the server sends on its own behalf, in the same JSON error shape the services use.
enum ServerResponses {
    static func error(_ status: Int, code: String, message: String, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse.json(
            status,
            "{\"error\":{\"code\":\(JSONText.quoted(code)),\"message\":\(JSONText.quoted(message))}}",
            headers: headers)
    }

    static func headerTooLarge(limit: Int) -> HTTPResponse {
        error(
            431, code: "header_too_large",
            message: "the request line and headers are over the limit of \(limit) bytes",
            headers: [("Connection", "close")])
    }

    static func bodyTooLarge(limit: Int) -> HTTPResponse {
        error(
            413, code: "body_too_large", message: "the request body is over the limit of \(limit) bytes",
            headers: [("Connection", "close")])
    }

    static let serverBusy = error(
        503, code: "server_busy",
        message: "the server holds as many request bodies as it may; retry after the Retry-After seconds",
        headers: [("Retry-After", "1")])

    static let deadlineExceeded = error(
        503, code: "deadline_exceeded", message: "the request was not answered in time",
        headers: [("Retry-After", "1")])

    static let shuttingDown = error(
        503, code: "shutting_down", message: "the server is shutting down; retry against another instance",
        headers: [("Retry-After", "1"), ("Connection", "close")])
}
