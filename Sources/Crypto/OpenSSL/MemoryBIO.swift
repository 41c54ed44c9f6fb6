import COpenSSL

/// A memory BIO owned for the duration of one call: created, used and freed by the same caller, never shared
/// (not Sendable).
package final class MemoryBIO {
    package let pointer: OpaquePointer

    /// An empty, writable memory BIO.
    package init() throws(CryptoError) {
        guard let bio = BIO_new(BIO_s_mem()) else {
            throw CryptoError.openSSL(.operationFailed, "could not allocate an OpenSSL memory buffer")
        }
        pointer = bio
    }

    /// A writable memory BIO holding a copy of `bytes` (readable by PEM and d2i_*_bio functions).
    package convenience init(copying bytes: [UInt8]) throws(CryptoError) {
        try self.init()
        let written = bytes.withUnsafeBytes { BIO_write(pointer, $0.baseAddress, Int32($0.count)) }
        guard written == Int32(bytes.count) || bytes.isEmpty else {
            throw CryptoError.openSSL(.operationFailed, "could not fill an OpenSSL memory buffer")
        }
    }

    deinit { BIO_free(pointer) }

    /// A copy of everything written to the BIO.
    package var bytes: [UInt8] {
        var data: UnsafePointer<UInt8>?
        let length = cossl_bio_get_mem_data(pointer, &data)
        guard length > 0, let data else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(length)))
    }
}
