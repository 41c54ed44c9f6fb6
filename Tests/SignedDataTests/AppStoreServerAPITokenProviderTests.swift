import Crypto
import Foundation
import SignedData
import Synchronization
import Testing
import ServiceSupport
import TestPKI

@Suite("AppStoreServerAPITokenProvider")
struct AppStoreServerAPITokenProviderTests {
    final class TestClock: Sendable {
        let seconds = Locked<Int64>(1_700_000_000)
        func now() -> Int64 { seconds.withLock { $0 } }
        func advance(_ delta: Int64) { seconds.withLock { $0 += delta } }
    }

    func credentials() throws -> AppStoreServerAPICredentials {
        try AppStoreServerAPICredentials(issuerId: "57246542-96fe-1a63-e053-0824d011072a", keyId: "2X9R4HXF34",
                                         privateKey: try ECPrivateKey.generate(curve: .p256))
    }

    func decodeSegment(_ segment: Substring) throws -> [String: Any] {
        var text = segment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        let data = try #require(Data(base64Encoded: text))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("signs a JWT with exactly Apple's header and claims, exp at most 60 minutes after iat")
    func headerAndClaims() throws {
        let credentials = try credentials()
        let token = try AppStoreServerAPITokenProvider.makeToken(
            credentials: credentials, bundleId: "com.example.app", issuedAt: 1_700_000_000, lifetimeSeconds: 7200)
        let parts = token.value.split(separator: ".")
        #expect(parts.count == 3)
        let header = try decodeSegment(parts[0])
        #expect(header.count == 3)
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == "2X9R4HXF34")
        #expect(header["typ"] as? String == "JWT")
        let claims = try decodeSegment(parts[1])
        #expect(Set(claims.keys) == ["iss", "iat", "exp", "aud", "bid"])
        #expect(claims["iss"] as? String == "57246542-96fe-1a63-e053-0824d011072a")
        #expect(claims["aud"] as? String == "appstoreconnect-v1")
        #expect(claims["bid"] as? String == "com.example.app")
        #expect(claims["iat"] as? Int == 1_700_000_000)
        #expect(claims["exp"] as? Int == 1_700_003_600)  // 2 h asked, clamped to Apple's 60 min
        #expect(token.expiresAt - token.issuedAt == 3600)
        #expect(token.authorizationHeader == "Bearer " + token.value)
        #expect(!token.description.contains(token.value))
        let signingInput = parts[0] + "." + parts[1]
        let signature = try #require(Data(base64Encoded: {
            var text = parts[2].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while text.count % 4 != 0 { text += "=" }
            return text
        }()))
        #expect(try credentials.privateKey.publicKey.verifyES256(signature: Array(signature), message: signingInput.utf8))
    }

    @Test("reuses one token per bundle id, renews it before expiry and after invalidate")
    func caching() throws {
        let clock = TestClock()
        let provider = AppStoreServerAPITokenProvider(
            credentials: try credentials(), lifetimeSeconds: 1800, renewalMarginSeconds: 300, now: { clock.now() })
        let first = try provider.token(bundleId: "com.example.a")
        #expect(first.issuedAt == 1_700_000_000 && first.expiresAt == 1_700_001_800)
        clock.advance(1)
        #expect(try provider.token(bundleId: "com.example.a") == first)
        let other = try provider.token(bundleId: "com.example.b")
        #expect(other != first)
        #expect(other.bundleId == "com.example.b")
        clock.advance(1800 - 300 - 2)  // one second before the renewal margin
        #expect(try provider.token(bundleId: "com.example.a") == first)
        clock.advance(1)  // inside the margin: renewed, still valid for 5 more minutes
        let renewed = try provider.token(bundleId: "com.example.a")
        #expect(renewed != first)
        #expect(renewed.issuedAt == clock.now())
        provider.invalidate(bundleId: "com.example.a")
        #expect(try provider.token(bundleId: "com.example.b") == other)  // invalidating one bundle leaves the others
        clock.advance(1)
        let afterInvalidate = try provider.token(bundleId: "com.example.a")
        #expect(afterInvalidate != renewed)
        #expect(afterInvalidate.issuedAt == clock.now())
        #expect(try provider.token(bundleId: "com.example.b") != other)  // b reached its own renewal margin
    }

    @Test("drops a refused token only while it is still the cached one, keeping a newer token other requests use")
    func invalidatingARefusedToken() throws {
        let clock = TestClock()
        let provider = AppStoreServerAPITokenProvider(credentials: try credentials(), now: { clock.now() })
        let refused = try provider.token(bundleId: "com.example.app")
        provider.invalidate(refused)
        clock.advance(1)
        let fresh = try provider.token(bundleId: "com.example.app")
        #expect(fresh != refused)
        // A second request that was refused with the old token must not throw the new one away.
        provider.invalidate(refused)
        #expect(try provider.token(bundleId: "com.example.app") == fresh)
        provider.invalidate(fresh)
        clock.advance(1)
        #expect(try provider.token(bundleId: "com.example.app") != fresh)
    }

    @Test("refuses credentials whose key is not P-256")
    func refusesP384() throws {
        let error = #expect(throws: CryptoError.self) {
            try AppStoreServerAPICredentials(issuerId: "i", keyId: "k", privateKey: try ECPrivateKey.generate(curve: .p384))
        }
        #expect(error?.kind == .unsupportedKey)
    }

    @Test("reads a .p8 key file and the token verifies with Python's PyJWT (independent implementation)")
    func pythonVerifiesToken() throws {
        let key = try ECPrivateKey.generate(curve: .p256)
        let path = NSTemporaryDirectory() + "AuthKey_TEST-\(UUID().uuidString).p8"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try key.pkcs8PEM().write(toFile: path, atomically: true, encoding: .utf8)
        let credentials = try AppStoreServerAPICredentials(issuerId: "issuer-1", keyId: "KEY123", privateKeyPath: path)
        let token = try AppStoreServerAPITokenProvider(credentials: credentials).token(bundleId: "com.example.app")
        let answer = try SignedDataFixtures.oracle([
            "op": "verify-jwt", "token": token.value,
            "publicKeyDER": Data(try key.publicKey.subjectPublicKeyInfo()).base64EncodedString(),
        ])
        let header = try #require(answer["header"] as? [String: Any])
        let claims = try #require(answer["claims"] as? [String: Any])
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == "KEY123")
        #expect(claims["bid"] as? String == "com.example.app")
        #expect(claims["iss"] as? String == "issuer-1")
        #expect((claims["exp"] as? Int ?? 0) - (claims["iat"] as? Int ?? 0) <= 3600)
    }
}
