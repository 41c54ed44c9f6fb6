import Crypto

/// What signs App Store Server API tokens: the issuer id and key id from App Store Connect, and the "In-App
/// Purchase" private key (`.p8`, EC P-256 PKCS#8 PEM).
public struct AppStoreServerAPICredentials: Sendable {
    /// Issuer id (a UUID) from App Store Connect › Users and Access › Integrations.
    public let issuerId: String
    /// The key's id (`kid`).
    public let keyId: String
    public let privateKey: ECPrivateKey

    /// - Throws: `CryptoError.Kind.unsupportedKey` when the key is not P-256 (ES256 needs P-256).
    public init(issuerId: String, keyId: String, privateKey: ECPrivateKey) throws(CryptoError) {
        guard privateKey.curve == .p256 else {
            throw CryptoError(.unsupportedKey, "the App Store Server API key must be EC P-256 (an In-App Purchase .p8 key)")
        }
        self.issuerId = issuerId
        self.keyId = keyId
        self.privateKey = privateKey
    }

    /// Reads the key from a `.p8` file.
    public init(issuerId: String, keyId: String, privateKeyPath: String) throws(CryptoError) {
        try self.init(issuerId: issuerId, keyId: keyId, privateKey: try ECPrivateKey.load(path: privateKeyPath))
    }
}
