/// Why signed data (a JWS from the App Store, or a legacy receipt) was refused.
///
/// Every kind maps to the contract's reason `invalid_signature` (`contractReason`), except a receipt whose bytes
/// are not a receipt at all (`invalid_receipt`) and `revocationStatusUnavailable`, which is no refusal at all: the
/// caller retries later (`isRetryable`; submissions take the `apple_unavailable` retry path). `message` is precise,
/// for logs and DLQ records; it names the failing part (segment, certificate subject, OID, date) and never quotes
/// payload contents or key material.
public struct SignedDataError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Not a compact JWS: not three base64url segments, too large, header not a JSON object.
        case malformed
        /// The header's `alg` is not `ES256` (`none`, `HS256`, `RS256`, ... are all refused).
        case unsupportedAlgorithm
        /// The header's `x5c` is missing or does not have exactly 3 certificates.
        case invalidChainLength
        /// An `x5c` entry is not standard base64 of a DER certificate, or the leaf key is not P-256.
        case unreadableCertificate
        /// The chain does not lead to one of the configured roots (or a certificate signature is bad).
        case untrustedChain
        /// A certificate of the chain was expired or not yet valid at the payload's `signedDate`.
        case certificateNotValidAtSignedDate
        /// The leaf lacks Apple's receipt-signing marker 1.2.840.113635.100.6.11.1.
        case leafMarkerMissing
        /// The intermediate lacks Apple's WWDR marker 1.2.840.113635.100.6.2.1.
        case intermediateMarkerMissing
        /// The leaf is a CA certificate (basic constraints `CA:TRUE`): Apple's signing leaf is an end entity
        /// (`AppleSigningPathPolicy`).
        case leafIsCertificateAuthority
        /// The ES256 signature does not verify with the leaf's key over `header.payload`.
        case invalidSignature
        /// The payload is not a JSON object.
        case payloadNotJSON
        /// The payload has no readable `signedDate`, so there is no time to validate the chain at.
        case missingSignedDate
        /// A legacy receipt's bytes are not a PKCS#7 receipt (ASN.1 structure, attributes).
        case malformedReceipt
        /// A legacy receipt's PKCS#7 signature or signer chain did not verify.
        case receiptSignatureInvalid
        /// A certificate of the chain is revoked, or unknown to its issuer's OCSP responder (a verified answer,
        /// `RevocationChecker`): refused, `invalid_signature`.
        case certificateRevoked
        /// No verified OCSP answer about a certificate of the chain could be had now (responder unreachable, slow,
        /// `tryLater`, an unreadable or unverifiable response): not a verdict on the data; retry later
        /// (`isRetryable`), never refuse.
        case revocationStatusUnavailable
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    /// True when the data was not judged and must be verified again later (`revocationStatusUnavailable`).
    public var isRetryable: Bool { kind == .revocationStatusUnavailable }

    /// The result reason of the message contract this error maps to (`apple_unavailable` for a retryable error,
    /// which is never a rejection).
    @_spi(Testing) public var contractReason: String {
        switch kind {
        case .malformedReceipt: "invalid_receipt"
        case .revocationStatusUnavailable: "apple_unavailable"
        default: "invalid_signature"
        }
    }
}
