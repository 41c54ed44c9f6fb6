import COpenSSL

/// SHA-256 (OpenSSL's one-shot EVP digest).
public enum SHA256 {
    /// The 32-byte digest of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBytes { output in
                EVP_Digest(
                    input.baseAddress, input.count, output.bindMemory(to: UInt8.self).baseAddress, &length,
                    EVP_sha256(), nil)
            }
        }
        // EVP_Digest fails only when OpenSSL cannot allocate its context: nothing sensible can continue.
        precondition(ok == 1 && length == SHA256_DIGEST_LENGTH, "OpenSSL SHA-256 failed")
        return digest
    }

    /// The digest of `bytes` as 64 lower-case hex digits.
    public static func hexDigest(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(64)
        for byte in hash(bytes) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
