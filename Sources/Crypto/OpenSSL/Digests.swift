import COpenSSL

/// Message digests fetched from OpenSSL's default provider once per process. Fetching on every call (what
/// `EVP_sha256()` implies inside OpenSSL 3) costs a method-store lookup and a lock; these are fetched up front.
///
/// Invariant: the pointers are fetched once, never freed, and `EVP_MD` objects are immutable and safe to share
/// between threads.
package struct Digests: @unchecked Sendable {
    package let sha256: OpaquePointer
    package let sha384: OpaquePointer
    package let sha1: OpaquePointer

    package static let shared = Digests()

    private init() {
        // The default provider always has these; without them nothing in this module could work.
        guard let sha256 = EVP_MD_fetch(nil, "SHA256", nil), let sha384 = EVP_MD_fetch(nil, "SHA384", nil),
            let sha1 = EVP_MD_fetch(nil, "SHA1", nil)
        else {
            fatalError(OpenSSLErrorQueue.describe("OpenSSL's default provider has no SHA-256/SHA-384/SHA-1"))
        }
        self.sha256 = sha256
        self.sha384 = sha384
        self.sha1 = sha1
    }
}
