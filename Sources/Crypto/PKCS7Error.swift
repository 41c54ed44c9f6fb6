/// Why a PKCS#7 SignedData (a legacy App Store receipt) was refused.
public typealias PKCS7Error = KindedError<PKCS7ErrorKind>

/// What a `PKCS7Error` is about (`PKCS7Error.Kind`).
public enum PKCS7ErrorKind: Sendable, Equatable {
    /// Not a readable PKCS#7 SignedData with embedded content.
    case malformed
    /// Not exactly one signer, or the signer's certificate is not embedded.
    case signerNotFound
    /// The signer's certificate does not chain to a trusted root at the given time.
    case untrustedSigner(CertificateChainError.Kind)
    /// The signature does not verify over the content with the signer's key.
    case badSignature
}
