import Crypto
import HTTPClient
import ServiceSupport
import SignedData

/// A process's revocation checking as `APPLE_REVOCATION_CHECK` says: with `ocsp`, one `RevocationChecker` (one OCSP
/// cache, shared by every signed-data verifier of the process) over its own libcurl transport; with `off`, none.
/// The verifier, `receipt-admin` and `receipt-reconcile` all build it here, so the three check Apple's signed data
/// the same way.
public struct RevocationClient: Sendable {
    /// Nil with `APPLE_REVOCATION_CHECK=off`.
    public let checker: RevocationChecker?
    private let transport: CurlOCSPTransport?

    /// - Parameters:
    ///   - trustedRoots: `APPLE_ROOT_CERTIFICATES` (an OCSP answer must chain to them too).
    ///   - caBundlePath: `APPLE_CA_BUNDLE`, for an https responder with a private CA.
    /// - Throws: `HTTPClientError` when libcurl cannot be set up.
    public init(
        settings: RevocationSettings, trustedRoots: [Certificate], caBundlePath: String?, logger: Logger,
        metrics: MetricsRegistry? = nil
    ) throws(HTTPClientError) {
        switch settings.policy {
        case .off:
            checker = nil
            transport = nil
        case .ocsp:
            let transport = try CurlOCSPTransport(caBundlePath: caBundlePath, timeoutMs: settings.checker.timeoutMs)
            self.transport = transport
            checker = RevocationChecker(
                trustedRoots: trustedRoots, transport: transport, configuration: settings.checker, logger: logger,
                metrics: metrics)
        }
    }

    /// Closes the OCSP transport (idempotent); checks after it find no answer (`revocationStatusUnavailable`).
    public func close() {
        transport?.close()
    }
}
