import COpenSSL

/// An EC public key on P-256 or P-384 (from a certificate or a DER SubjectPublicKeyInfo).
///
/// Immutable and safe to use from many threads at once (see `EVPKey`).
public final class ECPublicKey: Sendable {
    let key: EVPKey
    /// The key's curve.
    public let curve: ECCurve

    init(key: EVPKey) throws(CryptoError) {
        guard let curve = key.curve else {
            throw CryptoError(.unsupportedKey, "the key is not an EC key on P-256 or P-384")
        }
        self.key = key
        self.curve = curve
    }

    /// Reads a DER SubjectPublicKeyInfo.
    ///
    /// - Throws: `CryptoError` `.unreadableKey` for bytes that are not a public key, `.unsupportedKey` for keys that
    ///   are not EC P-256/P-384.
    public convenience init(subjectPublicKeyInfo der: [UInt8]) throws(CryptoError) {
        guard let (parsed, _) = DERCoding.decode(der, { d2i_PUBKEY(nil, $0, $1) }) else {
            throw CryptoError.openSSL(.unreadableKey, "the bytes are not a DER SubjectPublicKeyInfo")
        }
        try self.init(key: EVPKey(owning: parsed))
    }

    /// DER SubjectPublicKeyInfo of this key.
    public func subjectPublicKeyInfo() throws(CryptoError) -> [UInt8] {
        try key.subjectPublicKeyInfo()
    }

    /// Verifies an ES256 signature (ECDSA P-256 with SHA-256) in JOSE form: 64 bytes, `r || s`.
    ///
    /// Returns false, never throws, for anything that is not a valid signature by this key over `message`: a
    /// signature of another length, a key on another curve, r or s out of range.
    public func verifyES256(signature: [UInt8], message: some Sequence<UInt8>) -> Bool {
        guard curve == .p256, signature.count == 64 else { return false }
        guard let der = try? ECDSASignature.der(fromRaw: signature, width: 32) else {
            OpenSSLErrorQueue.clear()
            return false
        }
        return verify(derSignature: der, message: message, digest: Digests.shared.sha256)
    }

    /// Verifies a DER ECDSA signature over `message` hashed with `digest`.
    func verify(derSignature: [UInt8], message: some Sequence<UInt8>, digest: OpaquePointer) -> Bool {
        guard let context = EVP_MD_CTX_new() else {
            OpenSSLErrorQueue.clear()
            return false
        }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, digest, nil, key.pointer) == 1 else {
            OpenSSLErrorQueue.clear()
            return false
        }
        let result = withContiguousBytes(message) { messageBuffer in
            derSignature.withUnsafeBufferPointer { signatureBuffer in
                EVP_DigestVerify(context, signatureBuffer.baseAddress, signatureBuffer.count,
                                 messageBuffer.baseAddress?.assumingMemoryBound(to: UInt8.self), messageBuffer.count)
            }
        }
        if result != 1 { OpenSSLErrorQueue.clear() }
        return result == 1
    }
}

/// Runs `body` over the bytes of `sequence`, in place when it has contiguous storage.
func withContiguousBytes<R>(_ sequence: some Sequence<UInt8>, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    if let result = sequence.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) {
        return result
    }
    return Array(sequence).withUnsafeBytes(body)
}
