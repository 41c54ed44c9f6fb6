import COpenSSL
import Crypto

/// Keys of the test and development PKI: made here, and written out for the fake App Store's key files. Production
/// code only loads keys (`ECPrivateKey.load`).
extension ECPrivateKey {
    /// A new random key on `curve`.
    public static func generate(curve: ECCurve = .p256) throws(CryptoError) -> ECPrivateKey {
        guard let pointer = cossl_ec_generate(curve.rawValue) else {
            throw CryptoError.openSSL(.operationFailed, "could not generate an EC \(curve.rawValue) key")
        }
        return try ECPrivateKey(key: EVPKey(owning: pointer))
    }

    /// The key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), the format App Store Connect hands out.
    public func pkcs8PEM() throws(CryptoError) -> String {
        let bio = try MemoryBIO()
        guard PEM_write_bio_PrivateKey(bio.pointer, key.pointer, nil, nil, 0, nil, nil) == 1 else {
            throw CryptoError.openSSL(.operationFailed, "could not write the private key as PEM")
        }
        return String(decoding: bio.bytes, as: UTF8.self)
    }
}
