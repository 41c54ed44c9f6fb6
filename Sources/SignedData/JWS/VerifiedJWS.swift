/// A JWS whose signature and certificate chain verified.
public struct VerifiedJWS: Sendable {
    /// The payload bytes (a JSON object), now trustworthy.
    public let payload: [UInt8]
    /// The payload's `signedDate`, milliseconds since 1970 (fraction dropped), at which the chain was validated.
    public let signedDateMs: Int64
    /// The protected header.
    public let header: JWSHeader
    /// SHA-256 fingerprint of the leaf certificate that signed it (for logs: which signing key was used).
    public let leafFingerprint: [UInt8]

    /// Decodes the payload as `type` (for example `JWSTransactionPayload`) with the tolerant App Store decoding.
    public func decode<T: Decodable>(_ type: T.Type) throws(SignedDataError) -> T {
        try SignedPayloadDecoder.decode(type, from: payload)
    }
}
