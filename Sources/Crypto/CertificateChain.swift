import COpenSSL

/// A certificate path that validated: leaf first, trusted root last.
public struct CertificateChain: Sendable {
    /// The path OpenSSL built and validated, leaf first, ending with one of the caller's roots.
    public let certificates: [Certificate]

    /// The latest `notBefore` of the path: the first second at which every certificate is valid.
    public var validFrom: Int64 { certificates.map(\.notBefore).max() ?? .min }
    /// The earliest `notAfter` of the path: the first second at which a certificate counts as expired. OpenSSL
    /// treats `notAfter` itself as expired, so the path validates at `t` exactly when `validFrom <= t < validUntil`.
    public var validUntil: Int64 { certificates.map(\.notAfter).min() ?? .max }

    /// True when `validFrom <= epochSeconds < validUntil`: the times at which `verify` accepts this path.
    public func isValid(atEpochSeconds epochSeconds: Int64) -> Bool {
        epochSeconds >= validFrom && epochSeconds < validUntil
    }

    /// RFC 5280 path validation of `leaf` through `intermediates` to one of `trustedRoots`, at a given time.
    ///
    /// Only the caller's roots are trusted (no system store, no `SSL_CERT_FILE`); no CRL or OCSP is consulted.
    /// Validity periods, issuer signatures, CA flags and path lengths are checked at `atEpochSeconds`.
    ///
    /// - Parameters:
    ///   - leaf: the end-entity certificate.
    ///   - intermediates: untrusted certificates path building may use.
    ///   - trustedRoots: the trust anchors; at least one.
    ///   - atEpochSeconds: the validation time, seconds since 1970-01-01 UTC.
    /// - Throws: `CertificateChainError` saying which certificate failed and why.
    public static func verify(
        leaf: Certificate, intermediates: [Certificate], trustedRoots: [Certificate], atEpochSeconds: Int64
    ) throws(CertificateChainError) -> CertificateChain {
        guard !trustedRoots.isEmpty else {
            throw CertificateChainError(kind: .untrustedRoot, code: 0, depth: 0,
                                        message: "no trusted root certificates are configured")
        }
        guard let store = X509_STORE_new() else { throw allocationFailure() }
        defer { X509_STORE_free(store) }
        for root in trustedRoots where X509_STORE_add_cert(store, root.pointer) != 1 {
            // A duplicate root is reported as an error by OpenSSL and is harmless.
            OpenSSLErrorQueue.clear()
        }
        guard let untrusted = cossl_sk_X509_new_null() else { throw allocationFailure() }
        defer { cossl_sk_X509_free(untrusted) }  // the certificates stay owned by their `Certificate`s
        for intermediate in intermediates {
            guard cossl_sk_X509_push(untrusted, intermediate.pointer) > 0 else { throw allocationFailure() }
        }
        guard let context = X509_STORE_CTX_new() else { throw allocationFailure() }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, leaf.pointer, untrusted) == 1 else { throw allocationFailure() }
        X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(context), time_t(atEpochSeconds))

        guard X509_verify_cert(context) == 1 else {
            let code = X509_STORE_CTX_get_error(context)
            let depth = X509_STORE_CTX_get_error_depth(context)
            var subject = leaf.subject
            if let current = X509_STORE_CTX_get_current_cert(context),
                let known = ([leaf] + intermediates + trustedRoots).first(where: { X509_cmp($0.pointer, current) == 0 })
            {
                subject = known.subject
            }
            OpenSSLErrorQueue.clear()
            throw CertificateChainError.from(code: code, depth: depth, subject: subject, atEpochSeconds: atEpochSeconds)
        }
        guard let built = X509_STORE_CTX_get1_chain(context) else { throw allocationFailure() }
        defer { cossl_sk_X509_pop_free(built) }
        let known = [leaf] + intermediates + trustedRoots
        var path: [Certificate] = []
        for index in 0..<cossl_sk_X509_num(built) {
            guard let element = cossl_sk_X509_value(built, index),
                let certificate = known.first(where: { $0.pointer == element || X509_cmp($0.pointer, element) == 0 })
            else { throw allocationFailure() }
            path.append(certificate)
        }
        return CertificateChain(certificates: path)
    }

    private static func allocationFailure() -> CertificateChainError {
        CertificateChainError(kind: .other, code: 0, depth: 0,
                              message: OpenSSLErrorQueue.describe("OpenSSL could not set up chain verification"))
    }
}
