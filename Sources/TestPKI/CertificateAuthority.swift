import COpenSSL
import Crypto

/// A certificate authority of the test and development PKI: mints roots, intermediates and leaves shaped like
/// Apple's App Store signing chain (root → WWDR-like intermediate → receipt-signing leaf), with configurable
/// validity windows and marker extensions so that tests can build every broken variant.
///
/// - Important: test and development only. Production code verifies against Apple's roots and never mints.
public struct CertificateAuthority: Sendable {
    /// Apple's marker extension on the WWDR intermediate (`AppleMarkerOID.wwdrIntermediate`).
    public static let intermediateMarkerOID = AppleMarkerOID.wwdrIntermediate
    /// Apple's marker extension on the App Store receipt-signing leaf (`AppleMarkerOID.receiptSigning`).
    public static let leafMarkerOID = AppleMarkerOID.receiptSigning

    /// This authority's own certificate and key.
    public let authority: MintedCertificate

    public init(authority: MintedCertificate) {
        self.authority = authority
    }

    /// A self-signed root CA.
    ///
    /// - Parameters:
    ///   - commonName: the subject CN.
    ///   - curve: the root's key curve (Apple Root CA - G3 is P-384).
    ///   - notBefore: validity start, seconds since 1970.
    ///   - notAfter: validity end, seconds since 1970.
    public static func makeRoot(
        commonName: String = "Test Root CA", curve: ECCurve = .p384, notBefore: Int64, notAfter: Int64
    ) throws(CryptoError) -> CertificateAuthority {
        let key = try ECPrivateKey.generate(curve: curve)
        let certificate = try mint(
            commonName: commonName, publicKey: key.key, issuer: nil, issuerKey: key, role: .root,
            notBefore: notBefore, notAfter: notAfter, markerOIDs: [])
        return CertificateAuthority(authority: MintedCertificate(certificate: certificate, privateKey: key))
    }

    /// An intermediate CA issued by this authority (by default path length 0, as Apple's WWDR intermediates: it may
    /// issue leaves only).
    ///
    /// - Parameters:
    ///   - markerOIDs: extensions to add with a DER NULL value; Apple's WWDR intermediate carries
    ///     `intermediateMarkerOID`. Pass `[]` for an intermediate missing it.
    ///   - maximumPathLength: the basic constraints' `pathlen` (how many CAs may follow it); nil for no limit, so
    ///     that tests can build a path with an extra CA between an intermediate and the leaf.
    public func issueIntermediate(
        commonName: String = "Test Intermediate CA", curve: ECCurve = .p256, notBefore: Int64, notAfter: Int64,
        markerOIDs: [String] = [CertificateAuthority.intermediateMarkerOID], maximumPathLength: Int? = 0,
        ocspURL: String? = nil
    ) throws(CryptoError) -> CertificateAuthority {
        if let maximumPathLength, maximumPathLength < 0 {
            throw CryptoError(.invalidArgument, "a path length constraint cannot be negative (\(maximumPathLength))")
        }
        let key = try ECPrivateKey.generate(curve: curve)
        let certificate = try CertificateAuthority.mint(
            commonName: commonName, publicKey: key.key, issuer: authority.certificate, issuerKey: authority.privateKey,
            role: .intermediate(maximumPathLength: maximumPathLength), notBefore: notBefore, notAfter: notAfter,
            markerOIDs: markerOIDs, ocspURL: ocspURL)
        return CertificateAuthority(authority: MintedCertificate(certificate: certificate, privateKey: key))
    }

    /// An end-entity (signing) certificate issued by this authority.
    ///
    /// - Parameters:
    ///   - markerOIDs: Apple's receipt-signing leaf carries `leafMarkerOID`. Pass `[]` for a leaf missing it.
    ///   - ocspURL: an OCSP responder URL for the Authority Information Access extension, as Apple's certificates
    ///     carry (`http://ocsp.apple.com/ocsp03-wwdrg602`); nil for none.
    public func issueLeaf(
        commonName: String = "Test App Store Signing", curve: ECCurve = .p256, notBefore: Int64, notAfter: Int64,
        markerOIDs: [String] = [CertificateAuthority.leafMarkerOID], ocspURL: String? = nil
    ) throws(CryptoError) -> MintedCertificate {
        let key = try ECPrivateKey.generate(curve: curve)
        let certificate = try CertificateAuthority.mint(
            commonName: commonName, publicKey: key.key, issuer: authority.certificate, issuerKey: authority.privateKey,
            role: .leaf, notBefore: notBefore, notAfter: notAfter, markerOIDs: markerOIDs, ocspURL: ocspURL)
        return MintedCertificate(certificate: certificate, privateKey: key)
    }

    /// An OCSP responder certificate this authority delegates to (RFC 6960 §4.2.2.2: extended key usage
    /// ocspSigning), for responses about the certificates it issued.
    public func issueOCSPResponder(
        commonName: String = "Test OCSP Responder", curve: ECCurve = .p256, notBefore: Int64, notAfter: Int64
    ) throws(CryptoError) -> MintedCertificate {
        let key = try ECPrivateKey.generate(curve: curve)
        let certificate = try CertificateAuthority.mint(
            commonName: commonName, publicKey: key.key, issuer: authority.certificate, issuerKey: authority.privateKey,
            role: .ocspResponder, notBefore: notBefore, notAfter: notAfter, markerOIDs: [])
        return MintedCertificate(certificate: certificate, privateKey: key)
    }

    private enum Role { case root, intermediate(maximumPathLength: Int?), leaf, ocspResponder }

    private static func mint(
        commonName: String, publicKey: EVPKey, issuer: Certificate?, issuerKey: ECPrivateKey, role: Role,
        notBefore: Int64, notAfter: Int64, markerOIDs: [String], ocspURL: String? = nil
    ) throws(CryptoError) -> Certificate {
        guard notBefore <= notAfter else {
            throw CryptoError(.invalidArgument, "notBefore (\(notBefore)) is after notAfter (\(notAfter))")
        }
        guard let x509 = X509_new() else { throw CryptoError.openSSL(.operationFailed, "could not allocate a certificate") }
        var owned = true
        defer { if owned { X509_free(x509) } }

        var serial = [UInt8](repeating: 0, count: 8)
        guard RAND_bytes(&serial, Int32(serial.count)) == 1 else {
            throw CryptoError.openSSL(.operationFailed, "no random bytes for a serial number")
        }
        let serialValue = serial.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } & 0x7fff_ffff_ffff_ffff | 1
        guard X509_set_version(x509, 2) == 1,
            ASN1_INTEGER_set_uint64(X509_get_serialNumber(x509), serialValue) == 1,
            ASN1_TIME_set(X509_getm_notBefore(x509), time_t(notBefore)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(x509), time_t(notAfter)) != nil,
            X509_set_pubkey(x509, publicKey.pointer) == 1
        else { throw CryptoError.openSSL(.operationFailed, "could not fill the certificate") }

        guard let name = X509_NAME_new() else { throw CryptoError.openSSL(.operationFailed, "could not allocate a name") }
        defer { X509_NAME_free(name) }
        guard cossl_x509_name_add_cn(name, commonName) == 1,
            cossl_x509_name_add_o(name, "receipt-verification test PKI") == 1,
            X509_set_subject_name(x509, name) == 1,
            X509_set_issuer_name(x509, issuer.map { X509_get_subject_name($0.pointer) } ?? name) == 1
        else { throw CryptoError.openSSL(.operationFailed, "could not set the certificate's names") }

        let issuerPointer = issuer?.pointer ?? x509
        let extensions: [(Int32, String)]
        switch role {
        case .root:
            extensions = [(NID_basic_constraints, "critical,CA:TRUE"), (NID_key_usage, "critical,keyCertSign,cRLSign"),
                          (NID_subject_key_identifier, "hash")]
        case .intermediate(let maximumPathLength):
            let constraints = maximumPathLength.map { "critical,CA:TRUE,pathlen:\($0)" } ?? "critical,CA:TRUE"
            extensions = [(NID_basic_constraints, constraints),
                          (NID_key_usage, "critical,keyCertSign,cRLSign"), (NID_subject_key_identifier, "hash"),
                          (NID_authority_key_identifier, "keyid:always")]
        case .leaf:
            extensions = [(NID_basic_constraints, "critical,CA:FALSE"), (NID_key_usage, "critical,digitalSignature"),
                          (NID_subject_key_identifier, "hash"), (NID_authority_key_identifier, "keyid:always")]
        case .ocspResponder:
            extensions = [(NID_basic_constraints, "critical,CA:FALSE"), (NID_key_usage, "critical,digitalSignature"),
                          (NID_ext_key_usage, "OCSPSigning"), (NID_subject_key_identifier, "hash"),
                          (NID_authority_key_identifier, "keyid:always")]
        }
        var allExtensions = extensions
        if let ocspURL {
            guard !ocspURL.contains(","), !ocspURL.isEmpty else {
                throw CryptoError(.invalidArgument, "'\(ocspURL)' is not an OCSP responder URL")
            }
            allExtensions.append((NID_info_access, "OCSP;URI:" + ocspURL))
        }
        for (nid, value) in allExtensions where cossl_x509_add_conf_ext(x509, issuerPointer, nid, value) != 1 {
            throw CryptoError.openSSL(.operationFailed, "could not add extension \(value)")
        }
        for oid in markerOIDs where cossl_x509_add_marker_ext(x509, oid) != 1 {
            throw CryptoError.openSSL(.invalidArgument, "could not add marker extension '\(oid)' (is it a dotted OID?)")
        }

        let digest = issuerKey.curve == .p384 ? Digests.shared.sha384 : Digests.shared.sha256
        guard X509_sign(x509, issuerKey.key.pointer, digest) > 0 else {
            throw CryptoError.openSSL(.operationFailed, "could not sign the certificate")
        }
        owned = false
        return try Certificate(owning: x509)
    }
}
