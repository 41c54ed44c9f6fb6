/// How the revocation checker reaches an OCSP responder: one HTTP POST of a DER `OCSPRequest` with
/// `Content-Type: application/ocsp-request`, answered by the response body. Implemented over libcurl in the AppStore
/// module (`CurlOCSPTransport`), by fakes in tests; SignedData itself makes no network calls.
public protocol OCSPTransport: Sendable {
    /// Posts `request` to `url`; `completion` runs exactly once, on any thread, with the body of a 2xx answer or
    /// a failure (no answer within `timeoutMs`, connection refused, another HTTP status).
    func post(
        _ request: [UInt8], to url: String, timeoutMs: Int,
        completion: @escaping @Sendable (Result<[UInt8], OCSPTransportError>) -> Void)
}

/// Why no OCSP response body arrived.
public struct OCSPTransportError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
