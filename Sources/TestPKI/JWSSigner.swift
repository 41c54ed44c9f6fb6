import Crypto
import ReceiptModel
import SignedData

/// Produces App Store-shaped compact JWS: header `{"alg":"ES256","x5c":[leaf, intermediate, root]}` (standard
/// base64 DER), base64url payload, raw `r || s` ES256 signature.
///
/// - Important: for the fake App Store, tests and `make dev`, with keys of the test PKI. Production only verifies.
public struct JWSSigner: Sendable {
    public let privateKey: ECPrivateKey
    /// The certificates placed in `x5c`, leaf first.
    public let chain: [Certificate]

    public init(privateKey: ECPrivateKey, chain: [Certificate]) {
        self.privateKey = privateKey
        self.chain = chain
    }

    /// A JWS of `payload` (JSON bytes, used as they are).
    public func sign(payload: [UInt8]) throws(CryptoError) -> String {
        try sign(payload: payload, headerJSON: Self.header(alg: "ES256", chain: chain))
    }

    /// A JWS of `payload` under an arbitrary header (for tests of refused headers), signed with ES256.
    public func sign(payload: [UInt8], headerJSON: String) throws(CryptoError) -> String {
        let signingInput = Base64URL.encode(Array(headerJSON.utf8)) + "." + Base64URL.encode(payload)
        let signature = try privateKey.signES256(message: signingInput.utf8)
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// The header JSON App Store JWS carry: `alg` and `x5c` with the certificates in standard base64.
    public static func header(alg: String, chain: [Certificate]) -> String {
        let certificates = chain.map { "\"" + Base64.encode($0.der) + "\"" }.joined(separator: ",")
        return "{\"alg\":\"\(alg)\",\"x5c\":[\(certificates)]}"
    }

    /// Base64url without padding, as JWS segments are written.
    public static func base64URL(_ bytes: [UInt8]) -> String {
        Base64URL.encode(bytes)
    }
}
