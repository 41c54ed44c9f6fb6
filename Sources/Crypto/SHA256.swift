import COpenSSL

/// SHA-256 in one call (OpenSSL's one-shot `EVP_Digest` with a digest fetched once per process).
public enum SHA256 {
    /// The 32-byte SHA-256 digest of `bytes`.
    ///
    /// Arrays, array slices and `String.UTF8View`s are hashed in place; other sequences are copied first.
    public static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        if let digest = bytes.withContiguousStorageIfAvailable({ hash(buffer: UnsafeRawBufferPointer($0)) }) {
            return digest
        }
        return Array(bytes).withUnsafeBytes { hash(buffer: $0) }
    }

    /// The digest as 64 lowercase hexadecimal characters.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        Hex.encode(hash(bytes))
    }

    /// The digest of the bytes in `buffer`.
    public static func hash(buffer: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { output, count in
            var length: UInt32 = 0
            // EVP_Digest only fails on allocation failure inside OpenSSL; a digest cannot be "wrong" here.
            let ok = EVP_Digest(buffer.baseAddress, buffer.count, output.baseAddress, &length,
                                Digests.shared.sha256, nil)
            precondition(ok == 1 && length == 32, OpenSSLErrorQueue.describe("EVP_Digest(SHA-256) failed"))
            count = 32
        }
    }
}
