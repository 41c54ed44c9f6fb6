import COpenSSL
import Crypto

/// Receipts of the test and development PKI are signed here; production code only verifies them.
extension PKCS7SignedData {
    /// Signs `content` as a SignedData with embedded content (test and development receipts).
    ///
    /// The signer's certificate and `intermediates` are embedded, as in Apple's receipts (which embed the signer,
    /// the WWDR intermediate and Apple Root CA itself). The digest is the key's default (SHA-256 for P-256, SHA-384
    /// for P-384).
    public static func sign(
        content: [UInt8], signer: MintedCertificate, intermediates: [Certificate] = []
    ) throws(CryptoError) -> [UInt8] {
        guard let extra = cossl_sk_X509_new_null() else {
            throw CryptoError.openSSL(.operationFailed, "could not allocate a certificate list")
        }
        defer { cossl_sk_X509_free(extra) }
        for certificate in intermediates where cossl_sk_X509_push(extra, certificate.pointer) <= 0 {
            throw CryptoError.openSSL(.operationFailed, "could not build the certificate list")
        }
        let input = try MemoryBIO(copying: content)
        guard let p7 = PKCS7_sign(signer.certificate.pointer, signer.privateKey.key.pointer, extra, input.pointer,
                                  cossl_pkcs7_flags_sign())
        else {
            throw CryptoError.openSSL(.operationFailed, "PKCS#7 signing failed")
        }
        defer { PKCS7_free(p7) }
        guard let (der, _) = DERCoding.encode({ i2d_PKCS7(p7, $0) }) else {
            throw CryptoError.openSSL(.operationFailed, "could not encode the SignedData")
        }
        return der
    }
}
