/// The HTTP methods the client sends.
public enum HTTPMethod: String, Sendable, Equatable {
    /// `body` is sent (verifyReceipt, Get Notification History).
    case post = "POST"
    /// `body` is ignored (Get Transaction Info, Get Transaction History).
    case get = "GET"
    /// `body` is sent (Send Consumption Information, Set App Account Token, Extend Subscription Renewal Date).
    case put = "PUT"
}

/// One HTTP request to send.
public struct HTTPClientRequest: Sendable {
    public var method: HTTPMethod
    public var url: String
    /// Sent with `.post`; ignored with `.get`.
    public var body: [UInt8]
    /// Complete header lines, e.g. `Content-Type: application/json` or `Authorization: Bearer ...`. Header sets are
    /// built into libcurl lists once and reused while any request uses them, so a header that changes with every
    /// request costs a list each time: keep per-request values rare (a bearer token cached for minutes is fine).
    public var headers: [String]
    /// Overrides the configured request timeout when shorter (a submission's remaining deadline). Either counts from
    /// the call to `send`, time spent queued for a slot in the in-flight window included.
    public var timeoutMs: Int?
    /// Response headers to return in `HTTPClientResponse.headers` (case-insensitive names, e.g. `Retry-After`).
    /// Only these are looked up, after the transfer, so asking for none costs nothing.
    public var responseHeaders: [String]

    public init(
        method: HTTPMethod = .post, url: String, body: [UInt8] = [], headers: [String] = [], timeoutMs: Int? = nil,
        responseHeaders: [String] = []
    ) {
        self.method = method
        self.url = url
        self.body = body
        self.headers = headers
        self.timeoutMs = timeoutMs
        self.responseHeaders = responseHeaders
    }
}

/// A complete HTTP answer (any status code: 5xx is an answer, not an error).
public struct HTTPClientResponse: Sendable {
    public var status: Int
    public var body: [UInt8]
    /// The HTTP version of the answer: "1.1", "2", ... ("" when unknown).
    public var httpVersion: String
    /// Connections this request had to open (0 when it reused a kept-alive or multiplexed one).
    public var connectionsOpened: Int
    /// The response headers the request asked for (`HTTPClientRequest.responseHeaders`) that the answer carried,
    /// keyed by lower-cased name (the last value when a header came several times).
    public var headers: [String: String]

    public init(
        status: Int, body: [UInt8], httpVersion: String = "", connectionsOpened: Int = 0, headers: [String: String] = [:]
    ) {
        self.status = status
        self.body = body
        self.httpVersion = httpVersion
        self.connectionsOpened = connectionsOpened
        self.headers = headers
    }

    /// The value of response header `name` (case-insensitive), if it was asked for and present.
    public func header(_ name: String) -> String? {
        headers[name.lowercased()]
    }
}

/// Why no HTTP answer arrived.
public struct HTTPClientError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable {
        /// The request timeout elapsed (connect or transfer).
        case timeout
        /// No connection: refused, unreachable, name not resolved, connection reset, empty reply.
        case connectionFailed = "connection_failed"
        /// TLS handshake or certificate verification failed (an untrusted or wrong-host certificate is refused).
        case tls
        /// The response exceeded `HTTPClientConfiguration.maxResponseBytes`.
        case responseTooLarge = "response_too_large"
        /// The client was closed (`close()`) before the request completed.
        case shutdown
        /// A request libcurl refused to start (bad URL, unsupported protocol) or any other failure.
        case other
    }

    public let kind: Kind
    /// libcurl's `CURLcode` (0 when the error did not come from libcurl).
    public let curlCode: Int32
    public let message: String

    public init(kind: Kind, curlCode: Int32 = 0, message: String) {
        self.kind = kind
        self.curlCode = curlCode
        self.message = message
    }

    public var description: String { "\(kind.rawValue) (curl \(curlCode)): \(message)" }
}
