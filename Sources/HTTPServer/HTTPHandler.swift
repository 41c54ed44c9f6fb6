/// Delivers the response to one request. The first call wins; later calls are ignored.
public typealias HTTPResponder = @Sendable (HTTPResponse) -> Void

/// The application behind an `HTTPServer`.
public protocol HTTPHandler: Sendable {
    /// Call `respond` exactly once, from any thread, now or later (the connection is suspended meanwhile and
    /// holds no thread). Unanswered after `responseDeadline`, the server answers 503 itself.
    ///
    /// - Important: this is called on one of the server's few I/O threads: do only quick work here (parse, enqueue)
    ///   and answer later from wherever the slow work completes.
    func handle(_ request: HTTPRequest, respond: @escaping HTTPResponder)

    /// Decides about a request from its head alone, before a byte of its body is read: refuse it (authentication,
    /// unknown route, wrong media type) without buffering its body, or set a smaller body limit for it. Called once
    /// per request, on the connection's I/O thread, before `handle`; keep it quick and non-blocking.
    ///
    /// The default accepts every request with the server's body limit.
    func admit(_ head: HTTPRequestHead) -> HTTPAdmission
}

extension HTTPHandler {
    public func admit(_ head: HTTPRequestHead) -> HTTPAdmission { .accept }
}

/// Who produced a response: the handler, or the server on its behalf.
public enum HTTPResponseOrigin: String, Sendable {
    /// The handler's `respond`.
    case handler
    /// The server: the request line and headers were over `maxHeaderBytes` (431).
    case headerTooLarge = "header_too_large"
    /// The server: the body was over `maxBodyBytes` (413).
    case bodyTooLarge = "body_too_large"
    /// The server: bodies being received already hold `maxBufferedBodyBytes` (503 `server_busy`).
    case serverBusy = "server_busy"
    /// The server: the handler did not respond within `responseDeadline` (503).
    case deadline
    /// The server: the request arrived or was still waiting while the server was stopping (503).
    case shuttingDown = "shutting_down"
}

/// What the server reports about each response it queued, for access metrics (see `HTTPServer.init`).
public struct HTTPResponseEvent: Sendable {
    public let method: String
    public let path: String
    public let status: Int
    public let origin: HTTPResponseOrigin
    /// From the moment the request headers were parsed to the moment the response was queued.
    public let durationSeconds: Double
}
