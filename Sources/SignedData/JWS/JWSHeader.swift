/// The protected header of an App Store JWS: `alg`, the `x5c` certificate chain, and optional `kid` / `typ`.
public struct JWSHeader: Sendable, Equatable, Decodable {
    /// The signature algorithm; only `ES256` is accepted by the verifier.
    public let alg: String?
    /// Standard-base64 DER certificates: leaf, intermediate, root.
    public let x5c: [String]?
    public let kid: String?
    public let typ: String?
}
