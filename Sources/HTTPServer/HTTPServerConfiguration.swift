import ServiceSupport

/// Limits and threading of an `HTTPServer`.
public struct HTTPServerConfiguration: Sendable {
    /// Address to bind; port 0 picks a free port (read it back from `HTTPServer.port`).
    public var listen: ListenAddress
    /// Largest accepted request body. A larger `Content-Length` is answered 413 before the body is read; a chunked
    /// body that grows past it is discarded from then on and answered 413 (closing the connection when the client
    /// keeps sending more than the limit again).
    public var maxBodyBytes: Int = 1 << 20
    /// The most body bytes held across all connections for requests still being received, counted as they arrive
    /// (so a client that announces a large body and trickles it holds only what it sent). A body whose announced
    /// length does not fit in what is free when its head arrives, or that grows past what is free, is answered 503
    /// (`busyResponse`) and none of its bytes are kept. Bounds the memory slow or many senders can make the server
    /// hold.
    public var maxBufferedBodyBytes: Int = 64 << 20
    /// Threads, each with its own epoll set, serving connections. Handlers run on them. New connections are handed
    /// to them in turn, so a client opening many at once spreads over all of them.
    public var threadCount: Int = 2
    /// Concurrent connections; more are refused at accept (closed at once, nothing read). Each is one file
    /// descriptor: at start the server raises its soft `RLIMIT_NOFILE` to fit them (with descriptors to spare for
    /// everything else) when the hard limit allows, and otherwise accepts only as many as fit (logged).
    public var connectionLimit: Int = 10_000
    /// Concurrent connections per client IP; 0 = no limit.
    public var perIPConnectionLimit: Int = 0
    /// A connection idle (no bytes either way, not waiting for the handler) for this long is closed; and a kept-alive
    /// connection must deliver its next complete request head within this of the previous response, however many
    /// bytes trickle in meanwhile.
    public var idleTimeoutSeconds: Int = 30
    /// A new connection must deliver its first complete request head (request line and headers) within this, or it
    /// is closed without an answer, even while bytes keep trickling in (libmicrohttpd's idle timeout restarts with
    /// every byte: without this a client sending a header byte every few seconds holds a connection forever).
    public var requestHeadTimeout: Duration = .seconds(10)
    /// A request body must arrive completely within this of its head, or the connection is closed without an answer
    /// (what arrived of the body is dropped and the handler never sees the request).
    public var bodyTimeout: Duration = .seconds(30)
    /// Largest request head (request line and headers, as sent); a larger one is answered 431 `header_too_large` and
    /// the connection is closed. `connectionMemoryLimitBytes` must leave room for it (see there).
    public var maxHeaderBytes: Int = 8 * 1024
    /// A handler that has not responded by then gets a 503 sent on its behalf; its late response is dropped.
    public var responseDeadline: Duration = .seconds(30)
    /// libmicrohttpd's memory per connection, allocated when the connection is accepted and kept for its lifetime:
    /// the request line and headers, the read buffer, the response headers. A head that does not fit is answered 431
    /// (or 414 for a long URI) by libmicrohttpd itself, so the server uses at least `maxHeaderBytes` plus 8 KiB.
    /// Connections times this bounds most of what open connections cost.
    public var connectionMemoryLimitBytes: Int = 16 * 1024
    /// What is sent when a body does not fit under `maxBufferedBodyBytes` (default: 503 `server_busy` with
    /// `Retry-After: 1`). `Connection: close` is added when the body was not read.
    public var busyResponse: HTTPResponse = ServerResponses.serverBusy
    /// What is sent when the deadline passes (default: 503 `deadline_exceeded` with `Retry-After: 1`).
    public var deadlineResponse: HTTPResponse = ServerResponses.deadlineExceeded
    /// How long `close()` waits for requests still waiting on their handler before answering them 503.
    public var stopGracePeriod: Duration = .seconds(10)

    public init(
        listen: ListenAddress, maxBodyBytes: Int = 1 << 20, threadCount: Int = 2, connectionLimit: Int = 10_000,
        perIPConnectionLimit: Int = 0, idleTimeoutSeconds: Int = 30, responseDeadline: Duration = .seconds(30),
        connectionMemoryLimitBytes: Int = 16 * 1024, stopGracePeriod: Duration = .seconds(10),
        maxBufferedBodyBytes: Int = 64 << 20, requestHeadTimeout: Duration = .seconds(10),
        bodyTimeout: Duration = .seconds(30), maxHeaderBytes: Int = 8 * 1024
    ) {
        self.requestHeadTimeout = requestHeadTimeout
        self.bodyTimeout = bodyTimeout
        self.maxHeaderBytes = maxHeaderBytes
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
