import Crypto
import Glibc
import ServiceSupport
import SignedData

/// A minted App Store-shaped signing PKI (root → intermediate with 1.2.840.113635.100.6.2.1 → leaf with
/// 1.2.840.113635.100.6.11.1) plus the broken variants every verifier must refuse:
///
/// ```swift
/// let pki = try TestSigningPKI.mint()
/// let good = try pki.sign(payload: json)
/// let bad = try pki.sign(payload: json, defect: .leafMissingMarker)
/// let verifier = pki.verifier()
/// ```
///
/// Validity: the root for ±365 days around `referenceTime`, the intermediate ±200 days, the leaf ±30 days; sign
/// payloads whose `signedDate` is near `referenceTime` (`signedDateMs`).
///
/// - Important: test and development only (tests, the fake App Store, `make dev`).
public struct TestSigningPKI: Sendable {
    /// A way for a JWS to be wrong.
    public enum Defect: Sendable, CaseIterable {
        /// Signed by a chain minted under another root.
        case untrustedRoot
        /// The leaf lacks 1.2.840.113635.100.6.11.1.
        case leafMissingMarker
        /// The intermediate lacks 1.2.840.113635.100.6.2.1.
        case intermediateMissingMarker
        /// `x5c` holds only leaf and intermediate.
        case chainOfTwo
        /// The leaf carries the receipt-signing marker but is a CA certificate (basic constraints `CA:TRUE`).
        case leafIsCertificateAuthority
        /// The leaf expired a day before `referenceTime`.
        case leafExpired
        /// The leaf becomes valid a day after `referenceTime`.
        case leafNotYetValid
        /// A correctly signed JWS whose payload segment was replaced afterwards.
        case tamperedPayload
        /// The signature was made with a key other than the leaf's.
        case wrongSignature
        /// Header `alg` is `none` and the signature segment is a placeholder.
        case algNone
        /// Header `alg` is `HS256` with an HMAC-looking signature.
        case hs256
    }

    public static let day: Int64 = 86_400

    public let referenceTime: Int64
    public let root: CertificateAuthority
    public let intermediate: CertificateAuthority
    public let leaf: MintedCertificate

    /// Mints a fresh PKI around `referenceTime` (seconds since 1970; default now).
    public static func mint(referenceTime: Int64 = Int64(time(nil))) throws(CryptoError) -> TestSigningPKI {
        let root = try CertificateAuthority.makeRoot(
            commonName: "Test Root CA - G3", curve: .p384, notBefore: referenceTime - 365 * day,
            notAfter: referenceTime + 365 * day)
        let intermediate = try root.issueIntermediate(
            commonName: "Test Worldwide Developer Relations CA", notBefore: referenceTime - 200 * day,
            notAfter: referenceTime + 200 * day)
        let leaf = try intermediate.issueLeaf(
            commonName: "Test App Store Receipt Signing", notBefore: referenceTime - 30 * day,
            notAfter: referenceTime + 30 * day)
        return TestSigningPKI(referenceTime: referenceTime, root: root, intermediate: intermediate, leaf: leaf)
    }

    public init(referenceTime: Int64, root: CertificateAuthority, intermediate: CertificateAuthority,
                leaf: MintedCertificate) {
        self.referenceTime = referenceTime
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
    }

    /// The trust anchor to give verifiers.
    public var rootCertificate: Certificate { root.authority.certificate }

    /// `referenceTime` in milliseconds, for payloads' `signedDate`.
    public var signedDateMs: Int64 { referenceTime * 1000 }

    /// The signer for well-formed JWS.
    public var signer: JWSSigner {
        JWSSigner(privateKey: leaf.privateKey,
                  chain: [leaf.certificate, intermediate.authority.certificate, root.authority.certificate])
    }

    /// A verifier trusting this PKI's root only.
    public func verifier(cacheCapacity: Int = AppleSignedDataVerifier.defaultCacheCapacity) -> AppleSignedDataVerifier {
        AppleSignedDataVerifier(trustedRoots: [rootCertificate], cacheCapacity: cacheCapacity)
    }

    /// An OCSP responder for this PKI: the intermediate answers about the leaf, the root about the intermediate.
    public func ocspResponder(
        validitySeconds: Int64 = 12 * 3_600, clock: any ServiceClock = DispatchClock()
    ) -> TestOCSPResponder {
        TestOCSPResponder(authorities: [intermediate, root], validitySeconds: validitySeconds, clock: clock)
    }

    /// A well-formed JWS of `payload`, or one with `defect`.
    public func sign(payload: [UInt8], defect: Defect? = nil) throws(CryptoError) -> String {
        let rootCertificate = root.authority.certificate
        let intermediateCertificate = intermediate.authority.certificate
        guard let defect else { return try signer.sign(payload: payload) }
        switch defect {
        case .untrustedRoot:
            return try TestSigningPKI.mint(referenceTime: referenceTime).signer.sign(payload: payload)
        case .leafMissingMarker:
            let bare = try intermediate.issueLeaf(
                notBefore: leaf.certificate.notBefore, notAfter: leaf.certificate.notAfter, markerOIDs: [])
            return try JWSSigner(privateKey: bare.privateKey,
                                 chain: [bare.certificate, intermediateCertificate, rootCertificate])
                .sign(payload: payload)
        case .intermediateMissingMarker:
            let bareIntermediate = try root.issueIntermediate(
                notBefore: intermediateCertificate.notBefore, notAfter: intermediateCertificate.notAfter, markerOIDs: [])
            let newLeaf = try bareIntermediate.issueLeaf(
                notBefore: leaf.certificate.notBefore, notAfter: leaf.certificate.notAfter)
            return try JWSSigner(privateKey: newLeaf.privateKey,
                                 chain: [newLeaf.certificate, bareIntermediate.authority.certificate, rootCertificate])
                .sign(payload: payload)
        case .chainOfTwo:
            return try JWSSigner(privateKey: leaf.privateKey, chain: [leaf.certificate, intermediateCertificate])
                .sign(payload: payload)
        case .leafIsCertificateAuthority:
            let authority = try intermediate.issueIntermediate(
                commonName: "Test App Store Signing CA", notBefore: leaf.certificate.notBefore,
                notAfter: leaf.certificate.notAfter, markerOIDs: [CertificateAuthority.leafMarkerOID])
            return try JWSSigner(privateKey: authority.authority.privateKey,
                                 chain: [authority.authority.certificate, intermediateCertificate, rootCertificate])
                .sign(payload: payload)
        case .leafExpired, .leafNotYetValid:
            let window = defect == .leafExpired
                ? (referenceTime - 60 * TestSigningPKI.day, referenceTime - TestSigningPKI.day)
                : (referenceTime + TestSigningPKI.day, referenceTime + 60 * TestSigningPKI.day)
            let other = try intermediate.issueLeaf(notBefore: window.0, notAfter: window.1)
            return try JWSSigner(privateKey: other.privateKey,
                                 chain: [other.certificate, intermediateCertificate, rootCertificate])
                .sign(payload: payload)
        case .tamperedPayload:
            let parts = try signer.sign(payload: payload).split(separator: ".")
            var altered = payload
            altered.insert(contentsOf: Array(" ".utf8), at: min(1, altered.count))
            return parts[0] + "." + JWSSigner.base64URL(altered) + "." + parts[2]
        case .wrongSignature:
            let impostor = JWSSigner(privateKey: try ECPrivateKey.generate(curve: .p256), chain: signer.chain)
            return try impostor.sign(payload: payload)
        case .algNone:
            let header = JWSSigner.header(alg: "none", chain: signer.chain)
            return JWSSigner.base64URL(Array(header.utf8)) + "." + JWSSigner.base64URL(payload) + "."
                + JWSSigner.base64URL([0])
        case .hs256:
            let header = JWSSigner.header(alg: "HS256", chain: signer.chain)
            let signingInput = JWSSigner.base64URL(Array(header.utf8)) + "." + JWSSigner.base64URL(payload)
            return signingInput + "." + JWSSigner.base64URL(SHA256.hash(signingInput.utf8))
        }
    }
}
