/// A complete HTTP request as the handler sees it: headers parsed, body fully received (and within the limit).
public struct HTTPRequest: Sendable {
    /// The method as sent (`GET`, `POST`, ...).
    public let method: String
    /// The percent-decoded path without the query string (`/v1/receipts`).
    public let path: String
    /// The path as the client sent it, percent-encoding kept (`HTTPRequestHead.rawPath`).
    public let rawPath: String
    /// Query arguments, percent-decoded. When a name repeats, the last value wins.
    public let query: [String: String]
    /// Header names lower-cased. When a header repeats, the values are joined with ", " (RFC 9110 list semantics).
    public let headers: [String: String]
    /// The request body (empty when none was sent).
    public let body: [UInt8]
    /// The client's IP address as text, when known.
    public let remoteAddress: String?

    public init(
        method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
        body: [UInt8] = [], remoteAddress: String? = nil, rawPath: String? = nil
    ) {
        self.method = method
        self.path = path
        self.rawPath = rawPath ?? path
        self.query = query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// The request made of its head and the body received after it.
    public init(head: HTTPRequestHead, body: [UInt8]) {
        self.init(
            method: head.method, path: head.path, query: head.query, headers: head.headers, body: body,
            remoteAddress: head.remoteAddress, rawPath: head.rawPath)
    }

    /// The value of header `name` (any case).
    public func header(_ name: String) -> String? {
        headers[name.lowercased()]
    }
}
