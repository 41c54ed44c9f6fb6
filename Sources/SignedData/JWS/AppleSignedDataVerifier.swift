import Crypto
import Foundation
import Synchronization
import ServiceSupport

/// Verifies App Store signed data (StoreKit 2 transactions, renewal info, Server API responses, Server Notifications
/// V2) the way Apple's own libraries do offline (§2.7), anchored to the roots given at initialization only.
///
/// For each JWS: strict compact parsing, `alg` `ES256`, `x5c` of exactly 3 certificates; the payload must be a JSON
/// object with a readable `signedDate`; leaf (`x5c[0]`) → intermediate (`x5c[1]`) → one of our roots must validate
/// (RFC 5280, no CRL/OCSP) at that `signedDate` (`x5c[2]` is ignored); the intermediate must carry
/// 1.2.840.113635.100.6.2.1 and the leaf 1.2.840.113635.100.6.11.1; the leaf key must be P-256 and the signature
/// must verify over `header.payload`. Semantic checks (bundle id, environment) belong to the caller.
///
/// Verified (leaf, intermediate) pairs are cached (32 by default, least recently used out) with the chain's
/// validity window, so the steady state costs parsing plus one ECDSA verification; a cached pair is used only when
/// the new `signedDate` is inside that window. Header segments already checked are cached too (the same capacity),
/// sparing their base64 and JSON. Safe to share between threads.
///
/// With a `RevocationChecker` (`APPLE_REVOCATION_CHECK=ocsp`), the leaf and intermediate of every chain, cached or
/// not, are also checked for revocation once the signature verified (`.certificateRevoked` refuses,
/// `.revocationStatusUnavailable` says "retry later"); the checker's cache answers in the steady state.
public final class AppleSignedDataVerifier: Sendable {
    /// Apple's libraries cache 32 chains; leaves rotate about every two years, so a handful are live at once.
    public static let defaultCacheCapacity = 32

    /// The trust anchors.
    public let trustedRoots: [Certificate]
    /// OCSP checks of each verified chain's leaf and intermediate (nil: `APPLE_REVOCATION_CHECK=off`).
    public let revocation: RevocationChecker?
    private let cache: Locked<VerifiedChainCache>
    /// Header segments already checked (same capacity): a hit skips decoding the header and its certificates.
    private let headers: Locked<VerifiedHeaderCache>

    /// - Parameters:
    ///   - trustedRoots: the only roots chains may end at (Apple Root CA - G3 in production).
    ///   - cacheCapacity: verified chains kept; 0 disables the cache (every verification validates the chain).
    ///   - revocation: the (shared) revocation checker; nil for none.
    public init(
        trustedRoots: [Certificate], cacheCapacity: Int = AppleSignedDataVerifier.defaultCacheCapacity,
        revocation: RevocationChecker? = nil
    ) {
        self.trustedRoots = trustedRoots
        self.revocation = revocation
        cache = Locked(VerifiedChainCache(capacity: cacheCapacity))
        headers = Locked(VerifiedHeaderCache(capacity: cacheCapacity))
    }

    /// A verifier trusting the certificates in the files at `rootCertificatePaths` (DER or PEM, as listed by an
    /// `APPLE_ROOT_CERTIFICATES`-style setting; see `AppleRootCertificates`).
    ///
    /// - Throws: `CryptoError` naming the file that could not be read, or `.invalidArgument` for an empty list.
    public convenience init(
        rootCertificatePaths: [String], cacheCapacity: Int = AppleSignedDataVerifier.defaultCacheCapacity
    ) throws(CryptoError) {
        self.init(trustedRoots: try AppleRootCertificates.load(paths: rootCertificatePaths),
                  cacheCapacity: cacheCapacity)
    }

    /// Number of chains currently cached.
    @_spi(Testing) public var cachedChainCount: Int {
        cache.withLock { $0.count }
    }

    /// The chains currently cached (leaf, intermediate, root each): the certificates in use, for expiry metrics.
    public var chainsInUse: [CertificateChain] {
        cache.withLock { $0.chains }
    }

    /// Verifies `jws` and returns its payload.
    ///
    /// - Throws: `SignedDataError` whose kind says which check failed; all map to `invalid_signature` except
    ///   `.revocationStatusUnavailable` (`isRetryable`: verify again later).
    public func verify(_ jws: String) throws(SignedDataError) -> VerifiedJWS {
        let parsed = try parse(jws)
        return try verify(parsed, signedDateMs: try Self.signedDate(of: parsed.payload))
    }

    /// Verifies `jws` and decodes its payload as `type` in one pass: the payload JSON is parsed once, and the time
    /// the chain is validated at is the `signedDate` read from the decoded value (nil: absent or unreadable). The
    /// checks and their order are those of `verify(_:)`; `type` must decode only from a JSON object.
    ///
    /// - Throws: `SignedDataError`, as `verify(_:)` (`.payloadNotJSON` when the payload does not decode as `type`).
    public func verify<Payload: Decodable>(
        _ jws: String, as type: Payload.Type, signedDate: (Payload) -> Int64?
    ) throws(SignedDataError) -> (payload: Payload, verified: VerifiedJWS) {
        let parsed = try parse(jws)
        let decoded = try SignedPayloadDecoder.decode(type, from: parsed.payload)
        guard let signedDateMs = signedDate(decoded) else {
            throw SignedDataError(
                .missingSignedDate,
                "the payload has no readable signedDate, so there is no time to validate the chain at")
        }
        return (decoded, try verify(parsed, signedDateMs: signedDateMs))
    }

    /// A JWS split and decoded, its header checked (ES256, three `x5c` certificates in standard base64).
    private struct ParsedJWS {
        let header: JWSHeader
        let chainKey: VerifiedChainCache.Key
        let signingInput: [UInt8]
        let payload: [UInt8]
        let signature: [UInt8]
    }

    /// `CompactJWS.parse` plus the header checks, with a header seen before taken from the header cache.
    private func parse(_ jws: String) throws(SignedDataError) -> ParsedJWS {
        let bytes = Array(jws.utf8)
        let segments = try CompactJWS.split(bytes)
        let headerSegment = bytes[segments.0]
        let cached = headers.withLock { $0.lookup(headerSegment) }
        let header: JWSHeader
        if let cached {
            header = cached.header
        } else {
            header = try CompactJWS.decodeHeader(headerSegment)
        }
        guard let payload = Base64.decodeURL(bytes[segments.1]) else {
            throw SignedDataError(.malformed, "the JWS payload segment is not base64url")
        }
        guard let signature = Base64.decodeURL(bytes[segments.2]) else {
            throw SignedDataError(.malformed, "the JWS signature segment is not base64url")
        }
        let signingInput = Array(bytes[segments.0.lowerBound..<segments.1.upperBound])
        if let cached {
            return ParsedJWS(
                header: header, chainKey: cached.chainKey, signingInput: signingInput, payload: payload,
                signature: signature)
        }
        guard let x5c = header.x5c, x5c.count == 3 else {
            throw SignedDataError(
                .invalidChainLength,
                "the JWS header's x5c has \(header.x5c.map { "\($0.count)" } ?? "no") certificates; "
                    + "App Store data carries exactly 3 (leaf, intermediate, root)")
        }
        // Both certificates must be standard base64 (checked once per header); the chain cache is keyed by their
        // text, which the strict decoder maps one-to-one to their DER.
        _ = try certificateBytes(x5c[0], index: 0)
        _ = try certificateBytes(x5c[1], index: 1)
        let key = VerifiedChainCache.Key(leaf: Array(x5c[0].utf8), intermediate: Array(x5c[1].utf8))
        headers.withLock { $0.insert(VerifiedHeaderCache.Entry(header: header, chainKey: key), for: headerSegment) }
        return ParsedJWS(
            header: header, chainKey: key, signingInput: signingInput, payload: payload, signature: signature)
    }

    /// The signature length, the chain at `signedDateMs` (cached or validated), and the ES256 signature.
    private func verify(_ parsed: ParsedJWS, signedDateMs: Int64) throws(SignedDataError) -> VerifiedJWS {
        guard parsed.signature.count == 64 else {
            throw SignedDataError(.invalidSignature,
                                  "the signature is \(parsed.signature.count) bytes; an ES256 signature is 64 (r || s)")
        }
        let epochSeconds = Self.epochSeconds(milliseconds: signedDateMs)
        let key = parsed.chainKey
        let entry: VerifiedChainCache.Entry
        if let cached = cache.withLock({ $0.lookup(key, atEpochSeconds: epochSeconds) }) {
            entry = cached
        } else {
            // Every header here passed the base64 checks in `parse`: decoding its certificates cannot fail.
            let x5c = parsed.header.x5c ?? []
            let leaf = try certificate(try certificateBytes(x5c.first ?? "", index: 0), index: 0)
            let intermediate = try certificate(try certificateBytes(x5c.dropFirst().first ?? "", index: 1), index: 1)
            let (publicKey, chain) = try validate(leaf: leaf, intermediate: intermediate, atEpochSeconds: epochSeconds)
            entry = VerifiedChainCache.Entry(publicKey: publicKey, chain: chain, leafFingerprint: leaf.sha256Fingerprint)
            cache.withLock { $0.insert(entry, for: key) }
        }
        guard entry.publicKey.verifyES256(signature: parsed.signature, message: parsed.signingInput) else {
            throw SignedDataError(.invalidSignature,
                                  "the ES256 signature does not verify with the leaf certificate's key over header.payload")
        }
        try revocation?.check(path: entry.chain.certificates)
        return VerifiedJWS(payload: parsed.payload, signedDateMs: signedDateMs, header: parsed.header,
                           leafFingerprint: entry.leafFingerprint)
    }

    /// Apple's chain policy, uncached: `leaf` → `intermediate` → one of our roots at `atEpochSeconds`, exactly that
    /// path, both marker OIDs, a leaf that is not a CA (`AppleSigningPathPolicy`, shared with receipts), a P-256 leaf
    /// key. Returns the leaf's key.
    ///
    /// - Throws: `SignedDataError` (`.untrustedChain`, `.certificateNotValidAtSignedDate`, `.leafMarkerMissing`,
    ///   `.intermediateMarkerMissing`, `.leafIsCertificateAuthority`, `.unreadableCertificate`).
    @_spi(Testing) public func verifyChain(
        leaf: Certificate, intermediate: Certificate, atEpochSeconds: Int64
    ) throws(SignedDataError) -> ECPublicKey {
        try validate(leaf: leaf, intermediate: intermediate, atEpochSeconds: atEpochSeconds).0
    }

    private func validate(
        leaf: Certificate, intermediate: Certificate, atEpochSeconds: Int64
    ) throws(SignedDataError) -> (ECPublicKey, CertificateChain) {
        let chain: CertificateChain
        do {
            chain = try CertificateChain.verify(leaf: leaf, intermediates: [intermediate], trustedRoots: trustedRoots,
                                                atEpochSeconds: atEpochSeconds)
        } catch {
            switch error.kind {
            case .expired, .notYetValid:
                throw SignedDataError(.certificateNotValidAtSignedDate, "at the payload's signedDate: \(error.message)")
            default:
                throw SignedDataError(.untrustedChain, error.message)
            }
        }
        // Apple's path shape, the same policy as a receipt's signer (`AppleSigningPathPolicy`): exactly leaf →
        // x5c[1] → root, both markers, a leaf that is no CA.
        let path = chain.certificates
        if path.count == AppleSigningPathPolicy.pathLength, path[1] != intermediate {
            throw SignedDataError(
                .untrustedChain, "the certificate path does not run through x5c[1]: not leaf, x5c[1], root")
        }
        switch AppleSigningPathPolicy.violation(of: path) {
        case nil:
            break
        case .pathLength(let count):
            // A leaf issued directly by a root, or a longer path, is not Apple's shape.
            throw SignedDataError(
                .untrustedChain, "the certificate path has \(count) certificates instead of leaf, x5c[1], root")
        case .intermediateMarkerMissing(let subject):
            throw SignedDataError(
                .intermediateMarkerMissing,
                "the intermediate '\(subject)' lacks Apple's WWDR marker extension " + AppleMarkerOID.wwdrIntermediate)
        case .leafMarkerMissing(let subject):
            throw SignedDataError(
                .leafMarkerMissing,
                "the leaf '\(subject)' lacks Apple's App Store receipt-signing marker extension "
                    + AppleMarkerOID.receiptSigning)
        case .leafIsCertificateAuthority(let subject):
            throw SignedDataError(
                .leafIsCertificateAuthority,
                "the leaf '\(subject)' is a CA certificate (basic constraints); Apple's signing leaf is an end entity")
        }
        let publicKey: ECPublicKey
        do {
            publicKey = try leaf.publicKey()
        } catch {
            throw SignedDataError(.unreadableCertificate, "the leaf key is unusable: \(error.message)")
        }
        guard publicKey.curve == .p256 else {
            throw SignedDataError(.unreadableCertificate,
                                  "the leaf key is on \(publicKey.curve.rawValue); ES256 needs P-256")
        }
        return (publicKey, chain)
    }

    private func certificateBytes(_ text: String, index: Int) throws(SignedDataError) -> [UInt8] {
        guard let der = Base64.decodeStandard(text.utf8), !der.isEmpty else {
            throw SignedDataError(.unreadableCertificate, "x5c[\(index)] is not standard base64")
        }
        return der
    }

    private func certificate(_ der: [UInt8], index: Int) throws(SignedDataError) -> Certificate {
        do {
            return try Certificate(der: der)
        } catch {
            throw SignedDataError(.unreadableCertificate, "x5c[\(index)] is not a DER certificate: \(error.message)")
        }
    }

    /// The payload's `signedDate` in epoch milliseconds.
    static func signedDate(of payload: [UInt8]) throws(SignedDataError) -> Int64 {
        let probe: SignedDateProbe
        do {
            probe = try JSONDecoder().decode(SignedDateProbe.self, from: Data(payload))
        } catch {
            throw SignedDataError(.payloadNotJSON, "the JWS payload is not a JSON object")
        }
        switch probe.signedDate {
        case .value(let milliseconds): return milliseconds
        case .absent:
            throw SignedDataError(.missingSignedDate,
                                  "the payload has no signedDate, so there is no time to validate the chain at")
        case .unreadable:
            throw SignedDataError(.missingSignedDate,
                                  "the payload's signedDate is not epoch milliseconds, so there is no time to validate at")
        }
    }

    static func epochSeconds(milliseconds: Int64) -> Int64 {
        milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
    }
}

/// Reads only `signedDate` of a payload (and proves the payload is a JSON object).
private struct SignedDateProbe: Decodable {
    let signedDate: ReadableField<Int64>

    init(from decoder: any Decoder) throws {
        signedDate = try decoder.container(keyedBy: AnyCodingKey.self).readableInt("signedDate")
    }
}
