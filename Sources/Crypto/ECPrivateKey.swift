import COpenSSL

/// An EC private key on P-256 or P-384: an App Store Connect "In-App Purchase" key (a `.p8` file, PKCS#8 PEM,
/// P-256), or a key generated for the test and development PKI (TestPKI's `ECPrivateKey.generate`).
///
/// Immutable and safe to use from many threads at once (see `EVPKey`). Production code never writes it out (TestPKI's
/// `pkcs8PEM()` does, for the fake's key files); never log it.
public final class ECPrivateKey: Sendable {
    package let key: EVPKey
    /// The key's curve.
    public let curve: ECCurve

    package init(key: EVPKey) throws(CryptoError) {
        guard let curve = key.curve else {
            throw CryptoError(.unsupportedKey, "the private key is not an EC key on P-256 or P-384")
        }
        self.key = key
        self.curve = curve
    }

    /// Reads a PEM private key: PKCS#8 (`BEGIN PRIVATE KEY`, the `.p8` format) or SEC 1 (`BEGIN EC PRIVATE KEY`).
    ///
    /// - Throws: `CryptoError` `.unreadableKey` when the text holds no unencrypted private key, `.unsupportedKey`
    ///   when the key is not EC P-256/P-384. The message never quotes the input.
    public convenience init(pem: String) throws(CryptoError) {
        let bio = try MemoryBIO(copying: Array(pem.utf8))
        guard let pointer = PEM_read_bio_PrivateKey(bio.pointer, nil, nil, nil) else {
            throw CryptoError.openSSL(
                .unreadableKey,
                "the text is not an unencrypted PEM private key (expected '-----BEGIN PRIVATE KEY-----', the .p8 format)")
        }
        try self.init(key: EVPKey(owning: pointer))
    }

    /// Reads a `.p8` (PKCS#8 PEM) key file.
    public static func load(path: String) throws(CryptoError) -> ECPrivateKey {
        let bytes = try FileBytes.read(path: path)
        do throws(CryptoError) {
            return try ECPrivateKey(pem: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw CryptoError(error.kind, "\(path): \(error.message)")
        }
    }

    /// The public half.
    public var publicKey: ECPublicKey {
        get throws(CryptoError) {
            let der = try key.subjectPublicKeyInfo()
            return try ECPublicKey(subjectPublicKeyInfo: der)
        }
    }

    /// An ES256 signature (ECDSA P-256 with SHA-256) over `message`, in JOSE form: 64 bytes, `r || s`.
    ///
    /// - Throws: `CryptoError` `.unsupportedKey` when the key is not on P-256.
    public func signES256(message: some Sequence<UInt8>) throws(CryptoError) -> [UInt8] {
        guard curve == .p256 else {
            throw CryptoError(.unsupportedKey, "ES256 needs a P-256 key; this key is on \(curve.rawValue)")
        }
        let der = try sign(message: message, digest: Digests.shared.sha256)
        return try ECDSASignature.raw(fromDER: der, width: 32)
    }

    /// A DER ECDSA signature over `message` hashed with `digest`.
    func sign(message: some Sequence<UInt8>, digest: OpaquePointer) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else {
            throw CryptoError.openSSL(.operationFailed, "could not allocate a signing context")
        }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, digest, nil, key.pointer) == 1 else {
            throw CryptoError.openSSL(.operationFailed, "could not start an ECDSA signature")
        }
        let signature = withContiguousBytes(message) { messageBuffer -> [UInt8]? in
            let bytes = messageBuffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
            var length = 0
            guard EVP_DigestSign(context, nil, &length, bytes, messageBuffer.count) == 1 else { return nil }
            var output = [UInt8](repeating: 0, count: length)
            guard EVP_DigestSign(context, &output, &length, bytes, messageBuffer.count) == 1 else { return nil }
            return Array(output.prefix(length))
        }
        guard let signature else { throw CryptoError.openSSL(.operationFailed, "ECDSA signing failed") }
        return signature
    }
}
