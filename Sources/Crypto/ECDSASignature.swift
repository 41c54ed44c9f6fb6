import COpenSSL

/// Conversion between JOSE's raw `r || s` ECDSA signatures and the DER `ECDSA-Sig-Value` OpenSSL works with.
enum ECDSASignature {
    /// DER `SEQUENCE { INTEGER r, INTEGER s }` of a raw signature whose halves are `width` bytes each.
    static func der(fromRaw raw: [UInt8], width: Int) throws(CryptoError) -> [UInt8] {
        guard raw.count == 2 * width else {
            throw CryptoError(.invalidArgument, "an ECDSA signature must be \(2 * width) bytes (r || s), not \(raw.count)")
        }
        guard let signature = ECDSA_SIG_new() else {
            throw CryptoError.openSSL(.operationFailed, "could not allocate an ECDSA signature")
        }
        defer { ECDSA_SIG_free(signature) }
        let (r, s) = raw.withUnsafeBufferPointer { buffer in
            (BN_bin2bn(buffer.baseAddress, Int32(width), nil), BN_bin2bn(buffer.baseAddress! + width, Int32(width), nil))
        }
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            throw CryptoError.openSSL(.operationFailed, "could not build an ECDSA signature")
        }
        guard let (der, _) = DERCoding.encode({ i2d_ECDSA_SIG(signature, $0) }) else {
            throw CryptoError.openSSL(.operationFailed, "could not encode an ECDSA signature")
        }
        return der
    }

    /// The raw `r || s` form (each half left-padded to `width` bytes) of a DER signature.
    static func raw(fromDER der: [UInt8], width: Int) throws(CryptoError) -> [UInt8] {
        guard let (parsed, _) = DERCoding.decode(der, { d2i_ECDSA_SIG(nil, $0, $1) }) else {
            throw CryptoError.openSSL(.operationFailed, "OpenSSL produced an unreadable signature")
        }
        defer { ECDSA_SIG_free(parsed) }
        var raw = [UInt8](repeating: 0, count: 2 * width)
        let ok = raw.withUnsafeMutableBufferPointer { buffer in
            BN_bn2binpad(ECDSA_SIG_get0_r(parsed), buffer.baseAddress, Int32(width)) == Int32(width)
                && BN_bn2binpad(ECDSA_SIG_get0_s(parsed), buffer.baseAddress! + width, Int32(width)) == Int32(width)
        }
        guard ok else { throw CryptoError.openSSL(.operationFailed, "an ECDSA signature half does not fit \(width) bytes") }
        return raw
    }
}
