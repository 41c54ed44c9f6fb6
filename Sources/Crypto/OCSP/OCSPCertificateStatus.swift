/// What an OCSP responder says about one certificate (RFC 6960 §4.2.1 `CertStatus`).
public enum OCSPCertificateStatus: Sendable, Equatable {
    /// Not revoked (as of `thisUpdate`).
    case good
    /// Revoked at `revokedAt` (seconds since 1970), with the CRL reason code when the responder gave one
    /// (RFC 5280 §5.3.1: 1 keyCompromise, 2 cACompromise, 4 superseded, ...).
    case revoked(revokedAt: Int64, reason: Int?)
    /// The responder does not know the certificate.
    case unknown

    /// `good`, `revoked` or `unknown` (for logs and metrics).
    public var name: String {
        switch self {
        case .good: "good"
        case .revoked: "revoked"
        case .unknown: "unknown"
        }
    }
}

/// A verified answer about one certificate: its status and the interval the responder vouches for it.
public struct OCSPStatusAnswer: Sendable, Equatable {
    public let status: OCSPCertificateStatus
    /// When the status was known to be correct, seconds since 1970.
    public let thisUpdate: Int64
    /// When newer information will be available, seconds since 1970 (nil: the responder did not say).
    public let nextUpdate: Int64?

    public init(status: OCSPCertificateStatus, thisUpdate: Int64, nextUpdate: Int64?) {
        self.status = status
        self.thisUpdate = thisUpdate
        self.nextUpdate = nextUpdate
    }
}

/// Why an OCSP response was not accepted as an answer.
public typealias OCSPError = KindedError<OCSPErrorKind>

/// What an `OCSPError` is about (`OCSPError.Kind`).
public enum OCSPErrorKind: Sendable, Equatable {
    /// The bytes are not a DER OCSPResponse (or not a basic response).
    case malformed
    /// The responder answered with a status other than `successful` (`tryLater`, `internalError`, ...):
    /// no answer about the certificate, ask again later.
    case unsuccessful
    /// The response's signature does not verify, or its signer is neither the certificate's issuer nor a
    /// responder the issuer delegated (ocspSigning extended key usage) whose chain validates to the trusted roots.
    case untrustedSigner
    /// The response holds no answer about the certificate asked for.
    case noMatchingResponse
    /// The answer is not valid at the time given: `thisUpdate` in the future or `nextUpdate` in the past.
    case notValidAtTime
    /// OpenSSL failed an operation that should not fail (allocation).
    case operationFailed
}
