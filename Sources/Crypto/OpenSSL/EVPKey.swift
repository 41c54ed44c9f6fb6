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
        guard let (bytes, written) = DERCoding.encode({ i2d_PUBKEY(pointer, $0) }), written == bytes.count else {
            throw CryptoError.openSSL(.operationFailed, "could not encode a public key")
        }
        return bytes
    }
}
