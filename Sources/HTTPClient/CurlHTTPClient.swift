import ServiceSupport

/// An HTTP client (POST and GET) over libcurl's multi interface: hundreds of requests in flight on one network thread.
///
/// - One thread runs `curl_multi_socket_action` over epoll plus libcurl's timer; there is no thread per request.
/// - At most `maxInFlight` requests are on the wire; more wait in a FIFO queue (nothing is refused).
/// - Connections are kept alive and reused; HTTP/2 is negotiated over TLS and multiplexed when the server offers it.
/// - TLS peer and host verification are always on.
/// - Completion handlers run on a small fixed set of serial queues, never on the network thread; keep them short
///   or hop elsewhere for long work.
public final class CurlHTTPClient: Sendable {
    public let configuration: HTTPClientConfiguration
    private let loop: CurlMultiLoop

    /// - Throws: `HTTPClientError` when libcurl or epoll cannot be set up.
    public init(configuration: HTTPClientConfiguration, metrics: MetricsRegistry? = nil) throws(HTTPClientError) {
        precondition(configuration.maxInFlight > 0, "maxInFlight must be positive")
        self.configuration = configuration
        let gauge = metrics?.gauge("appstore_http_in_flight", help: "HTTP requests to the App Store on the wire")
        loop = try CurlMultiLoop(configuration: configuration, inFlightGauge: gauge)
        loop.start()
        if let metrics {
            metrics.collect(
                "appstore_http_queued", help: "HTTP requests waiting for a free in-flight slot", kind: .gauge
            ) {
                [loop] in [([], Double(loop.queuedCount))]
            }
        }
    }

    deinit {
        loop.close()
    }

    /// Sends `request` (its `method`: POST or GET). `completion` is called exactly once: with the response (any
    /// HTTP status), or with an error when no complete response arrived (timeout, connection or TLS failure,
    /// shutdown).
    public func send(
        _ request: HTTPClientRequest,
        completion: @escaping @Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void
    ) {
        let transfer = CurlTransfer(
            request: request, maxResponseBytes: configuration.maxResponseBytes, completion: completion)
        if !loop.submit(transfer) {
            completion(.failure(HTTPClientError(kind: .shutdown, message: "the HTTP client was shut down")))
        }
    }

    /// `send` for async callers.
    public func send(_ request: HTTPClientRequest) async -> Result<HTTPClientResponse, HTTPClientError> {
        await withCheckedContinuation { continuation in
            send(request) { continuation.resume(returning: $0) }
        }
    }

    /// Requests waiting for a slot in the in-flight window.
    @_spi(Testing) public var queuedRequests: Int { loop.queuedCount }

    /// Fails queued and in-flight requests with `.shutdown` and stops the network thread. Blocks until done;
    /// idempotent. Callers that want to drain wait for their completions first.
    public func close() {
        loop.close()
    }
}
