import HTTPClient
import ServiceSupport
import SignedData

/// The revocation checker's `OCSPTransport` over libcurl (`CurlHTTPClient`): `POST` with
/// `Content-Type: application/ocsp-request`, the body of a 2xx answer back.
///
/// It has its own client (its own network thread and completion queue, a small in-flight window), never the App
/// Store client's: a check waiting for its first OCSP answer may run on one of that client's completion queues,
/// and an answer delivered to the same queue could only arrive after the wait gave up.
public final class CurlOCSPTransport: OCSPTransport {
    private let client: CurlHTTPClient

    /// - Parameters:
    ///   - caBundlePath: `APPLE_CA_BUNDLE` (for an https responder URL with a private CA; Apple's responder is
    ///     plain http, its answers are signed).
    ///   - timeoutMs: the longest one request may take.
    /// - Throws: `HTTPClientError` when libcurl cannot be set up.
    public init(caBundlePath: String?, timeoutMs: Int) throws(HTTPClientError) {
        client = try CurlHTTPClient(
            configuration: HTTPClientConfiguration(
                maxInFlight: 8, requestTimeoutMs: timeoutMs, connectTimeoutMs: min(timeoutMs, 5_000),
                caBundlePath: caBundlePath, maxResponseBytes: 1 << 20, completionConcurrency: 1,
                userAgent: "receipt-verifier-ocsp", completionCoalescingMicroseconds: 0))
    }

    public func post(
        _ request: [UInt8], to url: String, timeoutMs: Int,
        completion: @escaping @Sendable (Result<[UInt8], OCSPTransportError>) -> Void
    ) {
        let http = HTTPClientRequest(
            method: .post, url: url, body: request,
            headers: ["Content-Type: application/ocsp-request", "Accept: application/ocsp-response"],
            timeoutMs: timeoutMs)
        client.send(http) { result in
            switch result {
            case .success(let response) where (200..<300).contains(response.status):
                completion(.success(response.body))
            case .success(let response):
                completion(.failure(OCSPTransportError("HTTP \(response.status)")))
            case .failure(let error):
                completion(.failure(OCSPTransportError(error.description)))
            }
        }
    }

    /// Fails what is in flight and closes the HTTP client: its network thread ends (idempotent).
    public func close() {
        client.close()
    }
}
