import Crypto

/// A certificate of the test and development PKI together with its private key.
///
/// - Important: test and development only (tests, the fake App Store, `make dev`). Nothing in production code
///   mints certificates; production trusts Apple's roots only.
public struct MintedCertificate: Sendable {
    public let certificate: Certificate
    public let privateKey: ECPrivateKey

    public init(certificate: Certificate, privateKey: ECPrivateKey) {
        self.certificate = certificate
        self.privateKey = privateKey
    }

    public var der: [UInt8] { certificate.der }
    public var pem: String { certificate.pem }
}
