import COpenSSL
import Glibc

/// An X.509 certificate (read from DER or PEM, or minted by `CertificateAuthority`).
///
/// Everything a caller reads (DER, names, validity, extension OIDs, fingerprint) is extracted once, when the
/// certificate is read. Invariant: `pointer` is one owned reference of an `X509` that is never modified afterwards;
/// OpenSSL's lazily computed extension cache is filled in `init` (`X509_check_purpose`), so later concurrent use by
/// chain verification only reads it. Released in `deinit`.
public final class Certificate: @unchecked Sendable, Hashable, CustomStringConvertible {
    package let pointer: OpaquePointer
    /// The certificate's DER encoding.
    public let der: [UInt8]
    /// The subject name in RFC 2253 form (for messages).
    public let subject: String
    /// The issuer name in RFC 2253 form (for messages).
    public let issuer: String
    /// Start of the validity period, seconds since 1970-01-01 UTC.
    public let notBefore: Int64
    /// End of the validity period (inclusive), seconds since 1970-01-01 UTC.
    public let notAfter: Int64
    /// Dotted OIDs of every extension the certificate carries.
    public let extensionOIDs: Set<String>
    /// True when the certificate may act as a certificate authority (basic constraints `CA:TRUE`, or an old
    /// self-signed v1 certificate), as OpenSSL's `X509_check_ca` judges it; false for end-entity certificates.
    public let isCertificateAuthority: Bool
    /// SHA-256 of the DER encoding.
    public let sha256Fingerprint: [UInt8]
    /// The serial number as uppercase hexadecimal without leading zeros (as `openssl x509 -serial` prints it).
    public let serialNumberHex: String
    /// The OCSP responder URLs of the Authority Information Access extension (`OCSP;URI:...`), in order; empty
    /// when it names none.
    public let ocspResponderURLs: [String]

    /// Takes ownership of one reference of `pointer`.
    package init(owning pointer: OpaquePointer) throws(CryptoError) {
        self.pointer = pointer
        // Fills OpenSSL's extension cache now, while this thread is the only user.
        _ = X509_check_purpose(pointer, -1, 0)
        guard let (der, _) = DERCoding.encode({ i2d_X509(pointer, $0) }) else {
            X509_free(pointer)
            throw CryptoError.openSSL(.unreadableCertificate, "the certificate cannot be re-encoded as DER")
        }
        self.der = der
        subject = Certificate.name(X509_get_subject_name(pointer))
        issuer = Certificate.name(X509_get_issuer_name(pointer))
        guard let notBefore = Certificate.epochSeconds(X509_get0_notBefore(pointer)),
            let notAfter = Certificate.epochSeconds(X509_get0_notAfter(pointer))
        else {
            X509_free(pointer)
            throw CryptoError.openSSL(.unreadableCertificate, "the certificate's validity dates are unreadable")
        }
        self.notBefore = notBefore
        self.notAfter = notAfter
        var oids: Set<String> = []
        for index in 0..<max(0, X509_get_ext_count(pointer)) {
            guard let object = X509_EXTENSION_get_object(X509_get_ext(pointer, index)) else { continue }
            var buffer = [CChar](repeating: 0, count: 128)
            let count = OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1)
            if count > 0 && count < Int32(buffer.count) {
                oids.insert(String(decoding: buffer.prefix(Int(count)).map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        extensionOIDs = oids
        isCertificateAuthority = X509_check_ca(pointer) != 0
        sha256Fingerprint = SHA256.hash(der)
        serialNumberHex = Certificate.serialHex(pointer)
        ocspResponderURLs = Certificate.ocspURLs(pointer)
    }

    deinit { X509_free(pointer) }

    /// Reads one DER certificate; the bytes must hold exactly one certificate and nothing after it.
    ///
    /// - Throws: `CryptoError.Kind.unreadableCertificate`.
    public convenience init(der: [UInt8]) throws(CryptoError) {
        guard let (parsed, consumed) = DERCoding.decode(der, { d2i_X509(nil, $0, $1) }) else {
            throw CryptoError.openSSL(.unreadableCertificate, "the \(der.count) bytes are not a DER X.509 certificate")
        }
        guard consumed == der.count else {
            X509_free(parsed)
            throw CryptoError(
                .unreadableCertificate, "\(der.count - consumed) unexpected bytes follow the DER X.509 certificate")
        }
        try self.init(owning: parsed)
    }

    /// Reads the first certificate of PEM text (`-----BEGIN CERTIFICATE-----`).
    public convenience init(pem: String) throws(CryptoError) {
        guard let first = try Certificate.parseAll(pem: pem).first else {
            throw CryptoError(.unreadableCertificate, "the text holds no PEM certificate")
        }
        try self.init(der: first.der)
    }

    /// Every certificate of PEM text, in order.
    ///
    /// - Throws: `CryptoError.Kind.unreadableCertificate` when a `BEGIN CERTIFICATE` block cannot be read.
    public static func parseAll(pem: String) throws(CryptoError) -> [Certificate] {
        let expected = pem.utf8.split(separator: UInt8(ascii: "\n")).filter {
            $0.starts(with: "-----BEGIN CERTIFICATE-----".utf8)
        }.count
        let bio = try MemoryBIO(copying: Array(pem.utf8))
        var certificates: [Certificate] = []
        while let pointer = PEM_read_bio_X509(bio.pointer, nil, nil, nil) {
            certificates.append(try Certificate(owning: pointer))
        }
        OpenSSLErrorQueue.clear()  // the loop always ends with "no start line"
        guard certificates.count == expected else {
            throw CryptoError(
                .unreadableCertificate,
                "the text has \(expected) '-----BEGIN CERTIFICATE-----' blocks but only \(certificates.count) are readable")
        }
        return certificates
    }

    /// Reads a certificate file: one or more PEM certificates, or a single DER certificate (`.cer`, `.der`).
    ///
    /// - Throws: `CryptoError` `.unreadableFile` or `.unreadableCertificate`, naming the path.
    public static func load(path: String) throws(CryptoError) -> [Certificate] {
        let bytes = try FileBytes.read(path: path)
        do throws(CryptoError) {
            if bytes.starts(with: Array("-----BEGIN".utf8)) || String(decoding: bytes, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") {
                let certificates = try parseAll(pem: String(decoding: bytes, as: UTF8.self))
                guard !certificates.isEmpty else { throw CryptoError(.unreadableCertificate, "no certificate in the file") }
                return certificates
            }
            return [try Certificate(der: bytes)]
        } catch {
            throw CryptoError(error.kind, "\(path): \(error.message)")
        }
    }

    /// True when the certificate carries an extension with the dotted OID (presence only, critical or not).
    public func hasExtension(oid: String) -> Bool {
        extensionOIDs.contains(oid)
    }

    /// True when subject and issuer names are equal (a root or other self-issued certificate).
    public var isSelfIssued: Bool {
        X509_NAME_cmp(X509_get_subject_name(pointer), X509_get_issuer_name(pointer)) == 0
    }

    /// The certificate's public key.
    ///
    /// - Throws: `CryptoError.Kind.unsupportedKey` when it is not an EC P-256/P-384 key.
    public func publicKey() throws(CryptoError) -> ECPublicKey {
        guard let key = X509_get_pubkey(pointer) else {
            throw CryptoError.openSSL(.unreadableKey, "the certificate's public key is unreadable (\(subject))")
        }
        do {
            return try ECPublicKey(key: EVPKey(owning: key))
        } catch {
            throw CryptoError(error.kind, "\(error.message) (certificate \(subject))")
        }
    }

    /// The certificate as PEM.
    public var pem: String {
        PEMText.encode(der, label: "CERTIFICATE")
    }

    /// The SHA-256 fingerprint as colon-separated uppercase hexadecimal (as Apple and `openssl x509` print it).
    @_spi(Testing) public var fingerprintText: String {
        Hex.encode(sha256Fingerprint, separator: ":").uppercased()
    }

    public var description: String {
        "certificate '\(subject)' issued by '\(issuer)'"
    }

    public static func == (lhs: Certificate, rhs: Certificate) -> Bool {
        lhs.der == rhs.der
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(sha256Fingerprint)
    }

    private static func name(_ name: OpaquePointer?) -> String {
        guard let name else { return "" }
        var buffer = [CChar](repeating: 0, count: 1024)
        let length = cossl_x509_name_rfc2253(name, &buffer, Int32(buffer.count))
        return String(decoding: buffer.prefix(Int(max(0, length))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func serialHex(_ pointer: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        let length = cossl_x509_serial_hex(pointer, &buffer, Int32(buffer.count))
        return String(decoding: buffer.prefix(Int(max(0, length))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func ocspURLs(_ pointer: OpaquePointer) -> [String] {
        var buffer = [CChar](repeating: 0, count: 2048)
        let count = cossl_x509_ocsp_url(pointer, -1, &buffer, Int32(buffer.count))
        var urls: [String] = []
        for index in 0..<max(0, count) {
            buffer[0] = 0
            _ = cossl_x509_ocsp_url(pointer, index, &buffer, Int32(buffer.count))
            let url = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if !url.isEmpty { urls.append(url) }
        }
        OpenSSLErrorQueue.clear()
        return urls
    }

    private static func epochSeconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Int64(timegm(&parts))
    }
}
