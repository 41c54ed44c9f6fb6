/// A request as it is known once its headers arrived, before any of its body was read: what
/// `HTTPHandler.admit(_:)` decides on.
public struct HTTPRequestHead: Sendable {
    /// The method as sent (`GET`, `POST`, ...).
    public let method: String
    /// The percent-decoded path without the query string (`/v1/receipts`).
    public let path: String
    /// The path as the client sent it, percent-encoding kept (`/v1/users/a%2Fb`): what a router splits into segments
    /// before decoding each (an encoded `/` is part of its segment, an encoded NUL is not the end).
    public let rawPath: String
    /// Query arguments, percent-decoded. When a name repeats, the last value wins.
    public let query: [String: String]
    /// Header names lower-cased. When a header repeats, the values are joined with ", " (RFC 9110 list semantics).
    public let headers: [String: String]
    /// The client's IP address as text, when known.
    public let remoteAddress: String?

    public init(
        method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
        remoteAddress: String? = nil, rawPath: String? = nil
    ) {
        self.method = method
        self.path = path
        self.rawPath = rawPath ?? path
        self.query = query
        self.headers = headers
        self.remoteAddress = remoteAddress
    }

    /// The value of header `name` (any case).
    public func header(_ name: String) -> String? {
        headers[name.lowercased()]
    }
}
