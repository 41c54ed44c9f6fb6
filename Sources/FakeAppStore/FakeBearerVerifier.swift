import Crypto
import Foundation
import SignedData
import Synchronization
import ServiceSupport

/// Checks App Store Server API bearer tokens the way Apple documents them: an ES256 JWT whose signature verifies
/// with the configured key, `aud` `appstoreconnect-v1`, a `bid`, `iat` not in the future, `exp` in the future and at
/// most 60 minutes after `iat` (and `iss` / `kid` when the fake was given them). Anything else is a 401.
///
/// Verified tokens are remembered (up to 256, until they expire) so a benchmark's thousands of requests with the
/// same token cost one signature check.
final class FakeBearerVerifier: Sendable {
    /// The key tokens must be signed with; nil checks the claims only (logged at start).
    let publicKey: ECPublicKey?
    let issuerId: String?
    let keyId: String?
    private let verified = Locked<[String: (bundleId: String, expiresAt: Int64)]>([:])

    init(publicKey: ECPublicKey?, issuerId: String?, keyId: String?) {
        self.publicKey = publicKey
        self.issuerId = issuerId
        self.keyId = keyId
    }

    /// The token's `bid`, or why it is refused.
    func check(authorization: String?, nowSeconds: Int64 = Int64(Date().timeIntervalSince1970)) -> Result<
        String, FakeUnauthorized
    > {
        guard let authorization, authorization.hasPrefix("Bearer ") else {
            return .failure(FakeUnauthorized("no Authorization: Bearer header"))
        }
        let token = String(authorization.dropFirst("Bearer ".count))
        if let known = verified.withLock({ $0[token] }) {
            return known.expiresAt > nowSeconds ? .success(known.bundleId) : .failure(FakeUnauthorized("token expired"))
        }
        let jws: CompactJWS
        do {
            jws = try CompactJWS.parse(token)
        } catch {
            return .failure(FakeUnauthorized("not an ES256 JWT: \(error.message)"))
        }
        if let keyId, jws.header.kid != keyId {
            return .failure(FakeUnauthorized("kid is not the configured key id"))
        }
        if let publicKey, !publicKey.verifyES256(signature: jws.signature, message: jws.signingInput) {
            return .failure(FakeUnauthorized("the signature does not verify with the configured API key"))
        }
        guard let claims = try? JSONDecoder().decode(Claims.self, from: Data(jws.payload)) else {
            return .failure(FakeUnauthorized("the claims are not a JSON object with iss, iat, exp, aud, bid"))
        }
        guard claims.aud == "appstoreconnect-v1" else { return .failure(FakeUnauthorized("aud is not appstoreconnect-v1")) }
        guard let bid = claims.bid, !bid.isEmpty else { return .failure(FakeUnauthorized("no bid claim")) }
        guard let iat = claims.iat, let exp = claims.exp else { return .failure(FakeUnauthorized("no iat or exp")) }
        guard exp - iat <= 3_600 else { return .failure(FakeUnauthorized("exp is more than 60 minutes after iat")) }
        guard iat <= nowSeconds + 60 else { return .failure(FakeUnauthorized("iat is in the future")) }
        guard exp > nowSeconds else { return .failure(FakeUnauthorized("token expired")) }
        if let issuerId, claims.iss != issuerId { return .failure(FakeUnauthorized("iss is not the configured issuer")) }
        verified.withLock { cache in
            if cache.count >= 256 { cache.removeAll(keepingCapacity: true) }
            cache[token] = (bid, exp)
        }
        return .success(bid)
    }

    private struct Claims: Decodable {
        let iss: String?
        let iat: Int64?
        let exp: Int64?
        let aud: String?
        let bid: String?
    }

    /// The key for checking tokens from a file: the `.p8` private key itself, or its public key (PEM).
    static func loadKey(path: String) throws -> ECPublicKey {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        if text.contains("PRIVATE KEY") {
            return try ECPrivateKey(pem: text).publicKey
        }
        let base64 = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        guard let der = Data(base64Encoded: base64) else {
            throw CryptoError(.unreadableKey, "\(path) is neither a PEM private key nor a PEM public key")
        }
        return try ECPublicKey(subjectPublicKeyInfo: Array(der))
    }
}

/// Why a bearer token was refused (logged by the fake; Apple's 401 body says nothing).
struct FakeUnauthorized: Error, Sendable {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}
