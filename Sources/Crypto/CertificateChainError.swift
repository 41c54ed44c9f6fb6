import COpenSSL

/// Why a certificate chain did not validate (RFC 5280 path validation by OpenSSL at a given time).
public struct CertificateChainError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A certificate of the path had expired at the validation time.
        case expired
        /// A certificate of the path was not yet valid at the validation time.
        case notYetValid
        /// The path does not end at one of the trusted roots the caller gave.
        case untrustedRoot
        /// A certificate's signature does not verify with its issuer's key.
        case badSignature
        /// An issuer is not allowed to issue (not a CA, path length exceeded, no keyCertSign).
        case invalidIssuer
        /// A certificate carries a critical extension OpenSSL does not understand.
        case unhandledCriticalExtension
        /// Any other path validation failure (`code` has OpenSSL's `X509_V_ERR_*` value).
        case other
    }

    public let kind: Kind
    /// OpenSSL's `X509_V_ERR_*` code (0 when the failure was found outside OpenSSL).
    public let code: Int32
    /// Position in the path of the certificate that failed (0 = leaf).
    public let depth: Int32
    public let message: String

    public init(kind: Kind, code: Int32, depth: Int32, message: String) {
        self.kind = kind
        self.code = code
        self.depth = depth
        self.message = message
    }

    public var description: String { message }

    /// Maps OpenSSL's verification result to a kind and a message naming the failing certificate and the time.
    static func from(code: Int32, depth: Int32, subject: String, atEpochSeconds time: Int64) -> CertificateChainError {
        let kind: Kind
        switch code {
        case X509_V_ERR_CERT_HAS_EXPIRED: kind = .expired
        case X509_V_ERR_CERT_NOT_YET_VALID: kind = .notYetValid
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
            X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT,
            X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_CERT_UNTRUSTED, X509_V_ERR_CERT_REJECTED:
            kind = .untrustedRoot
        case X509_V_ERR_CERT_SIGNATURE_FAILURE, X509_V_ERR_UNABLE_TO_DECRYPT_CERT_SIGNATURE,
            X509_V_ERR_UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY:
            kind = .badSignature
        case X509_V_ERR_INVALID_CA, X509_V_ERR_PATH_LENGTH_EXCEEDED, X509_V_ERR_KEYUSAGE_NO_CERTSIGN,
            X509_V_ERR_INVALID_PURPOSE:
            kind = .invalidIssuer
        case X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION: kind = .unhandledCriticalExtension
        default: kind = .other
        }
        let reason = String(cString: X509_verify_cert_error_string(Int(code)))
        let advice: String
        switch kind {
        case .expired, .notYetValid: advice = "the signature was made outside the certificate's validity period"
        case .untrustedRoot: advice = "the chain does not lead to a configured trusted root"
        case .badSignature: advice = "a certificate was not signed by its claimed issuer"
        default: advice = "the chain is not acceptable"
        }
        return CertificateChainError(
            kind: kind, code: code, depth: depth,
            message: "certificate chain rejected at depth \(depth) ('\(subject)') at \(time) s since 1970: \(reason) "
                + "(\(advice))")
    }
}
