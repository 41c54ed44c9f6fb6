import Foundation

/// How the libcurl client behaves. TLS peer and host verification are always on; only the trusted CA bundle can be
/// changed (for private test CAs).
public struct HTTPClientConfiguration: Sendable {
    /// Requests on the wire at once; more are queued in submission order (`VERIFIER_MAX_IN_FLIGHT`).
    public var maxInFlight: Int
    /// Whole-request timeout unless a request names a shorter one (`APPLE_TIMEOUT_MS`).
    public var requestTimeoutMs: Int
    /// Upper bound of the TCP + TLS connect phase (never above the request timeout).
    public var connectTimeoutMs: Int
    /// A PEM file of CA certificates to trust instead of the system store (`APPLE_CA_BUNDLE`).
    public var caBundlePath: String?
    /// Responses larger than this fail with `HTTPClientError.Kind.responseTooLarge` (receipts can be megabytes).
    public var maxResponseBytes: Int
    /// Serial queues that run completion handlers; completions never run on the network thread.
    public var completionConcurrency: Int
    public var userAgent: String
    /// How long a finished response may wait to be handed to a completion queue together with others (batches
    /// cost one thread wake-up instead of one per response). 0 hands each loop iteration's responses off at once.
    public var completionCoalescingMicroseconds: Int

    public init(
        maxInFlight: Int = 512, requestTimeoutMs: Int = 30_000, connectTimeoutMs: Int = 10_000,
        caBundlePath: String? = nil, maxResponseBytes: Int = 64 << 20,
        completionConcurrency: Int = ProcessInfo.processInfo.activeProcessorCount,
        userAgent: String = "receipt-verifier",
        completionCoalescingMicroseconds: Int = 1_000
    ) {
        self.maxInFlight = maxInFlight
        self.requestTimeoutMs = requestTimeoutMs
        self.connectTimeoutMs = connectTimeoutMs
        self.caBundlePath = caBundlePath
        self.maxResponseBytes = maxResponseBytes
        self.completionConcurrency = completionConcurrency
        self.userAgent = userAgent
        self.completionCoalescingMicroseconds = completionCoalescingMicroseconds
    }
}
