import COpenSSL

/// PKCS#7 / CMS SignedData with embedded content: what legacy (StoreKit 1) App Store receipts are.
public enum PKCS7SignedData {
    /// A SignedData whose signature and signer chain verified.
    public struct Verified: Sendable {
        /// The encapsulated content, exactly as signed.
        public let content: [UInt8]
        /// The signer's certificate.
        public let signer: Certificate
        /// The validated path from the signer to a trusted root.
        public let chain: CertificateChain
    }

    /// Verifies a DER/BER SignedData and returns its content.
    ///
    /// There must be exactly one signer, whose certificate is embedded; it must chain, through the other embedded
    /// certificates, to one of `trustedRoots` at `atEpochSeconds` (no CRL/OCSP); and the signature must verify over
    /// the content (RSA with SHA-1 or SHA-256 as in Apple's receipts, ECDSA as in minted ones; whatever OpenSSL
    /// verifies). Nothing is skipped: a content is returned only after both checks passed. Who the signer is (which
    /// path shape and certificate markers are acceptable) is the caller's policy, applied to `Verified.chain`.
    ///
    /// - Throws: `PKCS7Error` saying which check failed.
    public static func verify(
        der: [UInt8], trustedRoots: [Certificate], atEpochSeconds: Int64
    ) throws(PKCS7Error) -> Verified {
        guard let (p7, consumed) = DERCoding.decode(der, { d2i_PKCS7(nil, $0, $1) }) else {
            throw PKCS7Error(kind: .malformed, message: OpenSSLErrorQueue.describe("the receipt is not PKCS#7"))
        }
        defer { PKCS7_free(p7) }
        guard consumed == der.count || der[consumed...].allSatisfy({ $0 == 0 }) else {
            throw PKCS7Error(kind: .malformed, message: "\(der.count - consumed) unexpected bytes follow the PKCS#7 data")
        }
        guard cossl_pkcs7_is_signed(p7) == 1 else {
            throw PKCS7Error(kind: .malformed, message: "the PKCS#7 data is not SignedData")
        }
        guard cossl_pkcs7_signer_count(p7) == 1 else {
            throw PKCS7Error(kind: .signerNotFound,
                             message: "the SignedData has \(cossl_pkcs7_signer_count(p7)) signers; exactly one is accepted")
        }
        guard let signers = PKCS7_get0_signers(p7, nil, 0) else {
            throw PKCS7Error(kind: .signerNotFound,
                             message: OpenSSLErrorQueue.describe("the signer's certificate is not embedded"))
        }
        defer { cossl_sk_X509_free(signers) }
        guard cossl_sk_X509_num(signers) == 1, let signerPointer = cossl_sk_X509_value(signers, 0) else {
            throw PKCS7Error(kind: .signerNotFound, message: "the signer's certificate is not embedded")
        }
        let signer: Certificate
        let embedded: [Certificate]
        do {
            X509_up_ref(signerPointer)
            signer = try Certificate(owning: signerPointer)
            embedded = try embeddedCertificates(p7).filter { $0 != signer }
        } catch {
            throw PKCS7Error(kind: .malformed, message: "an embedded certificate is unreadable: \(error.message)")
        }

        let chain: CertificateChain
        do {
            chain = try CertificateChain.verify(
                leaf: signer, intermediates: embedded, trustedRoots: trustedRoots, atEpochSeconds: atEpochSeconds)
        } catch {
            throw PKCS7Error(kind: .untrustedSigner(error.kind), message: "receipt signer: \(error.message)")
        }

        let output: MemoryBIO
        do { output = try MemoryBIO() } catch {
            throw PKCS7Error(kind: .malformed, message: error.message)
        }
        // The chain was validated above, with the caller's roots and time; PKCS7_NOVERIFY only stops OpenSSL from
        // validating it a second time with its S/MIME purpose (which Xcode's StoreKit test certificate fails).
        guard PKCS7_verify(p7, nil, nil, nil, output.pointer, cossl_pkcs7_flags_verify_signature_only()) == 1 else {
            throw PKCS7Error(
                kind: .badSignature,
                message: OpenSSLErrorQueue.describe("the receipt's signature does not verify with its signer's key"))
        }
        return Verified(content: output.bytes, signer: signer, chain: chain)
    }

    private static func embeddedCertificates(_ p7: UnsafeMutablePointer<PKCS7>) throws(CryptoError) -> [Certificate] {
        guard let stack = cossl_pkcs7_certificates(p7) else { return [] }
        var certificates: [Certificate] = []
        for index in 0..<cossl_sk_X509_num(stack) {
            guard let pointer = cossl_sk_X509_value(stack, index) else { continue }
            X509_up_ref(pointer)
            certificates.append(try Certificate(owning: pointer))
        }
        return certificates
    }
}
