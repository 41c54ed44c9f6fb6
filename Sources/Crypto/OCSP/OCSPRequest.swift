import COpenSSL
import Glibc

/// OCSP requests (RFC 6960 §4.1): one `CertID` of SHA-1 hashes (what responders, Apple's included, index by), no
/// nonce (Apple's responder serves pre-produced responses) and no signature.
public enum OCSPRequest {
    /// The DER `OCSPRequest` asking about `certificate`, issued by `issuer` (the next certificate of its chain).
    ///
    /// - Throws: `CryptoError.Kind.operationFailed` when OpenSSL cannot build it.
    public static func der(certificate: Certificate, issuer: Certificate) throws(CryptoError) -> [UInt8] {
        guard let request = OCSP_REQUEST_new() else {
            throw CryptoError.openSSL(.operationFailed, "could not allocate an OCSP request")
        }
        defer { OCSP_REQUEST_free(request) }
        guard let id = OCSP_cert_to_id(Digests.shared.sha1, certificate.pointer, issuer.pointer) else {
            throw CryptoError.openSSL(.operationFailed, "could not build the OCSP CertID of \(certificate.subject)")
        }
        guard OCSP_request_add0_id(request, id) != nil else {
            OCSP_CERTID_free(id)
            throw CryptoError.openSSL(.operationFailed, "could not add the CertID to the OCSP request")
        }
        guard let (der, _) = DERCoding.encode({ i2d_OCSP_REQUEST(request, $0) }) else {
            throw CryptoError.openSSL(.operationFailed, "could not encode the OCSP request")
        }
        return der
    }
}

/// DER decoding of the OCSP objects; each must consume the whole input (nothing may follow it).
package enum OCSPASN1 {
    package static func request(_ der: [UInt8]) -> OpaquePointer? {
        whole(der, { d2i_OCSP_REQUEST(nil, $0, $1) }, free: OCSP_REQUEST_free)
    }

    static func response(_ der: [UInt8]) -> OpaquePointer? {
        whole(der, { d2i_OCSP_RESPONSE(nil, $0, $1) }, free: OCSP_RESPONSE_free)
    }

    private static func whole(
        _ der: [UInt8], _ d2i: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> OpaquePointer?,
        free: (OpaquePointer) -> Void
    ) -> OpaquePointer? {
        guard let (parsed, consumed) = DERCoding.decode(der, d2i) else { return nil }
        guard consumed == der.count else {
            free(parsed)
            return nil
        }
        return parsed
    }

    /// A `GeneralizedTime` (or `UTCTime`) as seconds since 1970.
    static func epochSeconds(_ time: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?) -> Int64? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(UnsafePointer(time), &parts) == 1 else { return nil }
        return Int64(timegm(&parts))
    }
}
