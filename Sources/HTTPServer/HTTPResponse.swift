/// A response to send: status, extra headers and body. `Content-Length` and `Date` are added by the server.
public struct HTTPResponse: Sendable {
    public var status: Int
    /// Header name and value pairs, sent in order. `Connection: close` ends the connection after this response.
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response (`Content-Type: application/json`) with `body` as given (it must already be JSON).
    public static func json(_ status: Int, _ body: String, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(body.utf8))
    }

    /// A text response.
    public static func text(_ status: Int, _ body: String, contentType: String = "text/plain; charset=utf-8")
        -> HTTPResponse
    {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: Array(body.utf8))
    }

    /// The value of the first header called `name` (any case).
    public func header(_ name: String) -> String? {
        headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }
}
