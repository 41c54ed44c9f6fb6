import ServiceSupport

/// Limits and threading of an `HTTPServer`.
public struct HTTPServerConfiguration: Sendable {
    /// Address to bind; port 0 picks a free port (read it back from `HTTPServer.port`).
    public var listen: ListenAddress
    /// Largest accepted request body. A larger `Content-Length` is answered 413 before the body is read; a chunked
    /// body that grows past it is discarded from then on and answered 413 (closing the connection when the client
    /// keeps sending more than the limit again).
    public var maxBodyBytes: Int = 1 << 20
    /// The most body bytes held across all connections for requests still being received (a request announcing its
    /// length reserves it when its headers arrive; a chunked body reserves as it arrives). A body that does not fit
    /// is answered 503 (`busyResponse`) and none of its bytes are kept. Bounds the memory slow or many senders can
    /// make the server hold.
    public var maxBufferedBodyBytes: Int = 64 << 20
    /// Threads, each with its own epoll set, serving connections. Handlers run on them.
    public var threadCount: Int = 2
    /// Concurrent connections; more are refused at accept.
    public var connectionLimit: Int = 10_000
    /// Concurrent connections per client IP; 0 = no limit.
    public var perIPConnectionLimit: Int = 0
    /// A connection idle (no bytes either way, not waiting for the handler) for this long is closed.
    public var idleTimeoutSeconds: Int = 30
    /// A handler that has not responded by then gets a 503 sent on its behalf; its late response is dropped.
    public var responseDeadline: Duration = .seconds(30)
    /// Per-connection memory for the request line, headers and read buffer; requests whose headers do not fit are
    /// answered 431 (or 414 for a long URI) by libmicrohttpd.
    public var connectionMemoryLimitBytes: Int = 32 * 1024
    /// What is sent when a body does not fit under `maxBufferedBodyBytes` (default: 503 `server_busy` with
    /// `Retry-After: 1`). `Connection: close` is added when the body was not read.
    public var busyResponse: HTTPResponse = ServerResponses.serverBusy
    /// What is sent when the deadline passes (default: 503 `deadline_exceeded` with `Retry-After: 1`).
    public var deadlineResponse: HTTPResponse = ServerResponses.deadlineExceeded
    /// How long `stop()` waits for requests still waiting on their handler before answering them 503.
    public var stopGracePeriod: Duration = .seconds(10)

    public init(
        listen: ListenAddress, maxBodyBytes: Int = 1 << 20, threadCount: Int = 2, connectionLimit: Int = 10_000,
        perIPConnectionLimit: Int = 0, idleTimeoutSeconds: Int = 30, responseDeadline: Duration = .seconds(30),
        connectionMemoryLimitBytes: Int = 32 * 1024, stopGracePeriod: Duration = .seconds(10),
        maxBufferedBodyBytes: Int = 64 << 20
    ) {
        self.maxBufferedBodyBytes = maxBufferedBodyBytes
        self.listen = listen
        self.maxBodyBytes = maxBodyBytes
        self.threadCount = threadCount
        self.connectionLimit = connectionLimit
        self.perIPConnectionLimit = perIPConnectionLimit
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.responseDeadline = responseDeadline
        self.connectionMemoryLimitBytes = connectionMemoryLimitBytes
        self.stopGracePeriod = stopGracePeriod
    }
}
