import COpenSSL

/// Owns one reference of an `EVP_PKEY`.
///
/// Invariant: the key is never modified after this wrapper is made (no parameter setters are called on it), and
/// OpenSSL 3 guards the only lazily-filled state of an `EVP_PKEY` (its provider export cache) with the key's own
/// lock, so signing and verifying with the same key from many threads at once is safe. The reference is released
/// in `deinit`, after the last Swift user is gone.
package final class EVPKey: @unchecked Sendable {
    package let pointer: OpaquePointer

    /// Takes ownership of one reference of `pointer`.
    package init(owning pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit { EVP_PKEY_free(pointer) }

    /// The EC curve of the key, or nil when it is not an EC key on a supported curve.
    var curve: ECCurve? {
        let nid = cossl_ec_curve_nid(pointer)
        if nid == cossl_nid_p256() { return .p256 }
        if nid == cossl_nid_p384() { return .p384 }
        return nil
    }

    /// DER SubjectPublicKeyInfo of the public half.
    func subjectPublicKeyInfo() throws(CryptoError) -> [UInt8] {
        let length = i2d_PUBKEY(pointer, nil)
        guard length > 0 else { throw CryptoError.openSSL(.operationFailed, "could not encode a public key") }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        let written = bytes.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_PUBKEY(pointer, &cursor)
        }
        guard written == length else { throw CryptoError.openSSL(.operationFailed, "could not encode a public key") }
        return bytes
    }
}
