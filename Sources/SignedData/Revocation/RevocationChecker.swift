import Crypto
import ServiceSupport

/// OCSP revocation checks of App Store signing chains, as Apple's libraries make them with online checks on
/// (§2.7 step 7): the leaf (issuer: the intermediate) and the intermediate (issuer: the root) of every verified
/// chain, hard-fail, with one cache shared by every message and every `AppleSignedDataVerifier` given this checker.
///
/// - A verified `good` answer passes; a verified `revoked` (or `unknown`) answer refuses the data
///   (`.certificateRevoked`, `invalid_signature`).
/// - Anything else is no answer (`.revocationStatusUnavailable`, retry later, never a refusal nor a pass): the
///   responder unreachable or slower than `timeoutMs`, an HTTP error, `tryLater`, and also a response that does not
///   verify (garbage from a proxy, a wrong signer, a stale answer). Apple's libraries refuse on a bad response; here
///   only a verified answer can refuse, so that nothing on the network path can turn valid purchases into
///   rejections, and nothing can make a check pass without one.
/// - Answers are kept until min(`nextUpdate`, fetched + `maxAgeSeconds`) and refreshed in the background from half
///   of that on, so in the steady state no check waits. Without a usable answer a check waits for the fetch (one per
///   certificate at a time; concurrent checks join it), at most `timeoutMs`. After a failed fetch, checks without a
///   usable answer fail at once for `retryIntervalSeconds`, then the next one asks again.
///
/// The request goes to `responderURL` when set (a proxy, an air-gapped mirror, the fake App Store), else to the
/// certificate's own Authority Information Access OCSP URL (Apple's: `http://ocsp.apple.com/...`).
public final class RevocationChecker: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// `APPLE_OCSP_RESPONDER_URL`: every request goes there instead of the certificates' AIA URLs.
        public var responderURL: String?
        /// `APPLE_OCSP_MAX_AGE_SECONDS`: the longest an answer is used after it was fetched.
        public var maxAgeSeconds: Int64
        /// `APPLE_OCSP_TIMEOUT_MS`: the longest one fetch (and a check waiting for it) may take.
        public var timeoutMs: Int
        /// Least time between a failed fetch and the next for the same certificate.
        public var retryIntervalSeconds: Int64
        /// Clock difference tolerated with the responder (`thisUpdate`, `nextUpdate`).
        public var allowedSkewSeconds: Int64
        /// Certificates remembered.
        public var capacity: Int

        public static let defaultMaxAgeSeconds: Int64 = 3_600
        public static let defaultTimeoutMs = 5_000

        public init(
            responderURL: String? = nil, maxAgeSeconds: Int64 = Configuration.defaultMaxAgeSeconds,
            timeoutMs: Int = Configuration.defaultTimeoutMs, retryIntervalSeconds: Int64 = 10,
            allowedSkewSeconds: Int64 = OCSPResponse.defaultAllowedSkewSeconds, capacity: Int = 64
        ) {
            self.responderURL = responderURL
            self.maxAgeSeconds = max(1, maxAgeSeconds)
            self.timeoutMs = max(1, timeoutMs)
            self.retryIntervalSeconds = max(0, retryIntervalSeconds)
            self.allowedSkewSeconds = max(0, allowedSkewSeconds)
            self.capacity = max(2, capacity)
        }
    }

    /// Which certificate of the chain a check is about (metrics, messages).
    public enum Role: String, Sendable, CaseIterable {
        case leaf
        case intermediate
    }

    public let configuration: Configuration
    private let trustedRoots: [Certificate]
    private let transport: any OCSPTransport
    private let clock: any ServiceClock
    private let logger: Logger?
    private let metrics: RevocationMetrics?
    private let cache: Locked<RevocationCache>

    /// - Parameters:
    ///   - trustedRoots: what a delegated responder's certificate must chain to (the verifiers' roots).
    ///   - metrics: with a registry, `<prefix>_ocsp_checks_total{certificate,result}`,
    ///     `<prefix>_ocsp_cache_hits_total` and `<prefix>_ocsp_fetches_total{result}`.
    public init(
        trustedRoots: [Certificate], transport: any OCSPTransport, configuration: Configuration = Configuration(),
        clock: any ServiceClock = DispatchClock(), logger: Logger? = nil, metrics: MetricsRegistry? = nil,
        metricsPrefix: String = "verifier"
    ) {
        self.trustedRoots = trustedRoots
        self.transport = transport
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.metrics = metrics.map { RevocationMetrics(registry: $0, prefix: metricsPrefix) }
        cache = Locked(
            RevocationCache(
                limits: RevocationCache.Limits(
                    maxAgeSeconds: configuration.maxAgeSeconds,
                    retryIntervalSeconds: configuration.retryIntervalSeconds, capacity: configuration.capacity)))
    }

    /// Checks the leaf and the intermediate of a validated path (leaf, intermediate, root).
    ///
    /// - Throws: `SignedDataError` `.certificateRevoked` or `.revocationStatusUnavailable`.
    public func check(path: [Certificate]) throws(SignedDataError) {
        guard path.count >= 3 else {
            throw SignedDataError(
                .revocationStatusUnavailable, "a chain of \(path.count) certificates cannot be checked for revocation")
        }
        try check(path[1], issuer: path[2], role: .intermediate)
        try check(path[0], issuer: path[1], role: .leaf)
    }

    /// Checks one certificate.
    public func check(_ certificate: Certificate, issuer: Certificate, role: Role) throws(SignedDataError) {
        let key = ByteKey(certificate.sha256Fingerprint)
        let decision = cache.withLock { $0.decide(key, now: nowSeconds) }
        let status: OCSPCertificateStatus
        switch decision {
        case .answered(let answer, let refresh):
            metrics?.cacheHits.increment()
            if let refresh { start(refresh, key: key, certificate: certificate, issuer: issuer, role: role) }
            status = answer.status
        case .recentFailure(let message):
            metrics?.checked(role, "unavailable")
            throw unavailable(certificate, role: role, message + " (not asked again for a few seconds)")
        case .wait(let flight, let startIt):
            if startIt { start(flight, key: key, certificate: certificate, issuer: issuer, role: role) }
            switch flight.wait(timeoutMs: configuration.timeoutMs + 250) {
            case .success(let answer)?:
                status = answer.status
            case .failure(let failure)?:
                metrics?.checked(role, "unavailable")
                throw unavailable(certificate, role: role, failure.message)
            case nil:
                metrics?.checked(role, "unavailable")
                throw unavailable(certificate, role: role, "no OCSP answer within \(configuration.timeoutMs) ms")
            }
        }
        switch status {
        case .good:
            metrics?.checked(role, "good")
        case .revoked(let revokedAt, let reason):
            metrics?.checked(role, "revoked")
            throw SignedDataError(
                .certificateRevoked,
                "the \(role.rawValue) certificate '\(certificate.subject)' (serial \(certificate.serialNumberHex)) is "
                    + "revoked since \(revokedAt) s since 1970" + (reason.map { " (CRL reason \($0))" } ?? "")
                    + " according to its issuer's OCSP responder: Apple no longer vouches for what it signed")
        case .unknown:
            metrics?.checked(role, "revoked")
            throw SignedDataError(
                .certificateRevoked,
                "the \(role.rawValue) certificate '\(certificate.subject)' (serial \(certificate.serialNumberHex)) is "
                    + "unknown to its issuer's OCSP responder (a signed 'unknown' answer): refused, as Apple's "
                    + "libraries do")
        }
    }

    /// The verified answer currently remembered about `certificate` (for tests and diagnostics).
    @_spi(Testing) public func cachedStatus(of certificate: Certificate) -> OCSPCertificateStatus? {
        cache.withLock { $0.answer(ByteKey(certificate.sha256Fingerprint))?.status }
    }

    private var nowSeconds: Int64 {
        let milliseconds = clock.wallMilliseconds()
        return milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
    }

    private func unavailable(_ certificate: Certificate, role: Role, _ message: String) -> SignedDataError {
        SignedDataError(
            .revocationStatusUnavailable,
            "the revocation status of the \(role.rawValue) certificate '\(certificate.subject)' is unavailable: "
                + message + " (retried later; APPLE_REVOCATION_CHECK=off only where no responder can be reached)")
    }

    /// Sends the OCSP request of `flight`; its completion records the result in the cache, then wakes the waiters.
    private func start(
        _ flight: RevocationFlight, key: ByteKey, certificate: Certificate, issuer: Certificate, role: Role
    ) {
        let finish: @Sendable (Result<OCSPStatusAnswer, RevocationFetchFailure>) -> Void = { [self] result in
            let previous = cache.withLock { cache -> String? in
                let previous = cache.entries[key]?.failure
                cache.finish(key, flight: flight, result: result, now: nowSeconds)
                return previous
            }
            switch result {
            case .success(let answer):
                metrics?.fetched("answered")
                if previous != nil {
                    logger?.info(
                        "OCSP answers again",
                        ["certificate": .string(role.rawValue), "status": .string(answer.status.name)])
                }
            case .failure(let failure):
                metrics?.fetched("failed")
                if previous == nil {
                    logger?.warning(
                        "OCSP status unavailable",
                        ["certificate": .string(role.rawValue), "subject": .string(certificate.subject),
                         "problem": .string(failure.message)])
                }
            }
            flight.complete(result)
        }
        guard let url = configuration.responderURL ?? certificate.ocspResponderURLs.first else {
            finish(.failure(RevocationFetchFailure(
                message: "the certificate names no OCSP responder (Authority Information Access); set "
                    + "APPLE_OCSP_RESPONDER_URL")))
            return
        }
        let request: [UInt8]
        do {
            request = try OCSPRequest.der(certificate: certificate, issuer: issuer)
        } catch {
            finish(.failure(RevocationFetchFailure(message: "no OCSP request could be built: \(error.message)")))
            return
        }
        let roots = trustedRoots
        let skew = configuration.allowedSkewSeconds
        transport.post(request, to: url, timeoutMs: configuration.timeoutMs) { [self] response in
            switch response {
            case .failure(let error):
                finish(.failure(RevocationFetchFailure(message: "OCSP responder \(url): \(error.message)")))
            case .success(let body):
                do throws(OCSPError) {
                    let answer = try OCSPResponse.verify(
                        der: body, certificate: certificate, issuer: issuer, trustedRoots: roots,
                        atEpochSeconds: nowSeconds, allowedSkewSeconds: skew)
                    finish(.success(answer))
                } catch {
                    finish(.failure(RevocationFetchFailure(
                        message: "OCSP responder \(url) gave no usable answer: \(error.message)")))
                }
            }
        }
    }
}

/// The checker's counters (looked up once).
struct RevocationMetrics: Sendable {
    private let checks: [String: Counter]
    let cacheHits: Counter
    private let fetches: [String: Counter]

    init(registry: MetricsRegistry, prefix: String) {
        var checks: [String: Counter] = [:]
        for role in RevocationChecker.Role.allCases {
            for result in ["good", "revoked", "unavailable"] {
                checks[role.rawValue + "/" + result] = registry.counter(
                    prefix + "_ocsp_checks_total",
                    help: "Revocation checks of signing-chain certificates by OCSP, by certificate and result",
                    labels: [("certificate", role.rawValue), ("result", result)])
            }
        }
        self.checks = checks
        cacheHits = registry.counter(
            prefix + "_ocsp_cache_hits_total", help: "Revocation checks answered from the shared OCSP cache")
        var fetches: [String: Counter] = [:]
        for result in ["answered", "failed"] {
            fetches[result] = registry.counter(
                prefix + "_ocsp_fetches_total",
                help: "OCSP requests sent, by result (answered: a verified answer; failed: none)",
                labels: [("result", result)])
        }
        self.fetches = fetches
    }

    func checked(_ role: RevocationChecker.Role, _ result: String) {
        checks[role.rawValue + "/" + result]?.increment()
    }

    func fetched(_ result: String) {
        fetches[result]?.increment()
    }
}
