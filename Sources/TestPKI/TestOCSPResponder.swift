import Crypto
import ServiceSupport
import SignedData

/// An OCSP responder for a test signing PKI, usable directly as the checker's `OCSPTransport` (tests) or behind
/// HTTP (the fake App Store's `POST /ocsp`): each authority answers about the certificates it issued (the
/// intermediate about the leaf, the root about the intermediate), `good` unless the serial was marked revoked, with
/// answers valid for `validitySeconds`. Modes make it fail, say `tryLater`, or hold requests until released.
///
/// - Important: test and development only.
public final class TestOCSPResponder: OCSPTransport, Sendable {
    /// How requests are answered.
    public enum Mode: String, Sendable, Equatable, CaseIterable {
        /// Signed answers.
        case answer
        /// Transport failures ("responder unreachable"); behind HTTP, a 503.
        case fail
        /// Unsigned `tryLater` responses.
        case tryLater = "try-later"
        /// Held without an answer until `mode` changes (a timeout, or a slow responder); behind HTTP, no answer
        /// before the client gives up.
        case hold
    }

    private struct Held: Sendable {
        let request: [UInt8]
        let completion: @Sendable (Result<[UInt8], OCSPTransportError>) -> Void
    }

    private struct State {
        var mode: Mode = .answer
        var revoked: [String: Int64] = [:]
        var requests = 0
        var held: [Held] = []
    }

    private let authorities: [OCSPResponseSigner]
    private let clock: any ServiceClock
    /// How long each answer is valid (`nextUpdate` - `thisUpdate`).
    public let validitySeconds: Int64
    private let state = Locked(State())

    /// - Parameter authorities: the certificate authorities whose certificates it answers about, each signing its
    ///   own answers.
    public init(authorities: [CertificateAuthority], validitySeconds: Int64 = 12 * 3_600,
                clock: any ServiceClock = DispatchClock()) {
        self.authorities = authorities.map { OCSPResponseSigner(authority: $0) }
        self.validitySeconds = validitySeconds
        self.clock = clock
    }

    /// The current mode; leaving `hold` answers the held requests in the new mode.
    public var mode: Mode {
        get { state.withLock { $0.mode } }
        set {
            let released = state.withLock { state -> [Held] in
                state.mode = newValue
                guard newValue != .hold else { return [] }
                defer { state.held = [] }
                return state.held
            }
            for held in released { held.completion(answer(held.request, mode: newValue)) }
        }
    }

    /// Marks the certificate with `serialHex` revoked (at `revokedAt`, default now), or good again.
    public func setRevoked(_ serialHex: String, _ revoked: Bool = true, at revokedAt: Int64? = nil) {
        let now = nowSeconds
        let serial = serialHex.uppercased()
        state.withLock { state -> Void in
            if revoked {
                state.revoked[serial] = revokedAt ?? now - 60
            } else {
                state.revoked[serial] = nil
            }
        }
    }

    /// Requests received so far.
    public var requestCount: Int { state.withLock { $0.requests } }

    /// Requests held (mode `hold`) and not answered yet.
    public var heldCount: Int { state.withLock { $0.held.count } }

    public func post(
        _ request: [UInt8], to url: String, timeoutMs: Int,
        completion: @escaping @Sendable (Result<[UInt8], OCSPTransportError>) -> Void
    ) {
        let mode = state.withLock { state -> Mode in
            state.requests += 1
            if state.mode == .hold { state.held.append(Held(request: request, completion: completion)) }
            return state.mode
        }
        if mode != .hold { completion(answer(request, mode: mode)) }
    }

    /// The DER response to a DER request in the current mode (nil: `fail` or `hold`, no response), for HTTP.
    public func respond(to request: [UInt8]) -> [UInt8]? {
        let mode = state.withLock { state -> Mode in
            state.requests += 1
            return state.mode
        }
        guard mode == .answer || mode == .tryLater else { return nil }
        return try? answer(request, mode: mode).get()
    }

    private var nowSeconds: Int64 { clock.wallMilliseconds() / 1000 }

    private func answer(_ request: [UInt8], mode: Mode) -> Result<[UInt8], OCSPTransportError> {
        switch mode {
        case .fail, .hold:
            return .failure(OCSPTransportError("connection refused (test responder in mode '\(mode.rawValue)')"))
        case .tryLater:
            return Self.encoded { () throws(CryptoError) in try OCSPResponseSigner.unsuccessful(.tryLater) }
        case .answer:
            let now = nowSeconds
            let revoked = state.withLock { $0.revoked }
            for authority in authorities {
                do {
                    if let der = try authority.respond(
                        toRequest: request, thisUpdate: now - 60, nextUpdate: now + validitySeconds,
                        status: { serial -> OCSPCertificateStatus in
                            guard let at = revoked[serial] else { return .good }
                            return .revoked(revokedAt: at, reason: 1)
                        })
                    {
                        return .success(der)
                    }
                } catch {
                    return Self.encoded { () throws(CryptoError) in
                        try OCSPResponseSigner.unsuccessful(.malformedRequest)
                    }
                }
            }
            return Self.encoded { () throws(CryptoError) in try OCSPResponseSigner.unsuccessful(.unauthorized) }
        }
    }

    private static func encoded(_ make: () throws(CryptoError) -> [UInt8]) -> Result<[UInt8], OCSPTransportError> {
        do {
            return .success(try make())
        } catch {
            return .failure(OCSPTransportError(error.message))
        }
    }
}
