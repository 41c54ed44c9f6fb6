/// What `VerifyReceiptBackend` needs of an HTTP client: send one request, get one answer (or why none came), and
/// close. `CurlHTTPClient` is the one the services use; the seam exists so that the verifier's per-message work can
/// be run in process without a network (bench/verifier-path-bench hands the real parsing and rules the bytes the
/// client would have received).
public protocol HTTPTransport: Sendable {
    /// `completion` is called exactly once, on any thread: with the response (any HTTP status) or with why no
    /// complete response arrived.
    func send(
        _ request: HTTPClientRequest,
        completion: @escaping @Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void)

    /// Fails what is queued or in flight and releases the transport's resources. Idempotent.
    func close()
}

extension CurlHTTPClient: HTTPTransport {}
