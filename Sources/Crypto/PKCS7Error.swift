/// Why a PKCS#7 SignedData (a legacy App Store receipt) was refused.
public struct PKCS7Error: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Not a readable PKCS#7 SignedData with embedded content.
        case malformed
        /// Not exactly one signer, or the signer's certificate is not embedded.
        case signerNotFound
        /// The signer's certificate does not chain to a trusted root at the given time.
        case untrustedSigner(CertificateChainError.Kind)
        /// The signature does not verify over the content with the signer's key.
        case badSignature
    }

    public let kind: Kind
    public let message: String

    public init(kind: Kind, message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
