/// What `HTTPHandler.admit(_:)` decides about a request whose headers arrived and whose body has not been read.
public enum HTTPAdmission: Sendable {
    /// Read the body (up to the server's `maxBodyBytes`), then call `handle`.
    case accept
    /// Read the body up to `maxBodyBytes` (the smaller of this and the server's limit); a larger body is answered
    /// 413 by the server, as for the server's own limit.
    case acceptBody(maxBodyBytes: Int)
    /// Answer now: the body is never read (nor buffered), `handle` is not called, and the connection is closed after
    /// the response when a body was announced (libmicrohttpd cannot skip an unread body on a kept-alive connection).
    case respond(HTTPResponse)
}
