import Crypto
import Foundation
import Glibc
import Synchronization
import ServiceSupport

/// Bearer tokens for the App Store Server API (§2.2): ES256 JWTs with header `{alg ES256, kid, typ JWT}` and claims
/// `{iss, iat, exp, aud "appstoreconnect-v1", bid}`, `exp` at most 60 minutes after `iat` (Apple refuses longer).
///
/// One token per bundle id is cached and reused until `renewalMarginSeconds` before it expires, then replaced;
/// `invalidate(bundleId:)` drops it (call it on HTTP 401 so the next request signs a new one). Safe to share
/// between threads. Tokens are never logged by this type.
public final class AppStoreServerAPITokenProvider: Sendable {
    public static let audience = "appstoreconnect-v1"
    /// Apple's limit: "Tokens that expire more than 60 minutes after the time in iat are not valid".
    public static let maximumLifetimeSeconds: Int64 = 3600

    public let credentials: AppStoreServerAPICredentials
    /// `exp - iat` of every token, clamped to 1...`maximumLifetimeSeconds`.
    public let lifetimeSeconds: Int64
    /// A cached token is replaced once fewer than this many seconds of it remain (clamped below the lifetime).
    public let renewalMarginSeconds: Int64
    private let now: @Sendable () -> Int64
    private let tokens = Locked<[String: AppStoreServerAPIToken]>([:])

    /// - Parameters:
    ///   - credentials: issuer, key id and `.p8` key.
    ///   - lifetimeSeconds: token lifetime; default 30 minutes, at most 60.
    ///   - renewalMarginSeconds: renew this long before expiry; default 5 minutes.
    ///   - now: the clock, seconds since 1970 (injectable for tests).
    public init(
        credentials: AppStoreServerAPICredentials, lifetimeSeconds: Int64 = 1800, renewalMarginSeconds: Int64 = 300,
        now: @escaping @Sendable () -> Int64 = { Int64(time(nil)) }
    ) {
        self.credentials = credentials
        self.lifetimeSeconds = min(max(lifetimeSeconds, 1), Self.maximumLifetimeSeconds)
        self.renewalMarginSeconds = min(max(renewalMarginSeconds, 0), self.lifetimeSeconds - 1)
        self.now = now
    }

    /// The token to use for `bundleId` now: the cached one while it has more than the renewal margin left,
    /// otherwise a newly signed one (which replaces it in the cache).
    ///
    /// - Throws: `CryptoError` if signing fails.
    public func token(bundleId: String) throws(CryptoError) -> AppStoreServerAPIToken {
        let current = now()
        if let cached = tokens.withLock({ $0[bundleId] }), current < cached.expiresAt - renewalMarginSeconds,
            current >= cached.issuedAt
        {
            return cached
        }
        let fresh = try Self.makeToken(credentials: credentials, bundleId: bundleId, issuedAt: current,
                                       lifetimeSeconds: lifetimeSeconds)
        tokens.withLock { $0[bundleId] = fresh }
        return fresh
    }

    /// Forgets the cached token of `bundleId` (after Apple answered 401 to it).
    public func invalidate(bundleId: String) {
        _ = tokens.withLock { $0.removeValue(forKey: bundleId) }
    }

    /// Forgets `token` if it is still the cached one for its bundle id (after Apple answered 401 to it). Many
    /// requests in flight with the same refused token drop it once: a token another request already signed to
    /// replace it is kept.
    public func invalidate(_ token: AppStoreServerAPIToken) {
        tokens.withLock { tokens in
            if tokens[token.bundleId] == token { tokens.removeValue(forKey: token.bundleId) }
        }
    }

    /// Signs one token.
    ///
    /// - Throws: `CryptoError` if signing fails.
    public static func makeToken(
        credentials: AppStoreServerAPICredentials, bundleId: String, issuedAt: Int64, lifetimeSeconds: Int64
    ) throws(CryptoError) -> AppStoreServerAPIToken {
        let lifetime = min(max(lifetimeSeconds, 1), maximumLifetimeSeconds)
        let header = Header(alg: "ES256", kid: credentials.keyId, typ: "JWT")
        let claims = Claims(iss: credentials.issuerId, iat: issuedAt, exp: issuedAt + lifetime, aud: audience,
                            bid: bundleId)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let headerJSON: Data
        let claimsJSON: Data
        do {
            headerJSON = try encoder.encode(header)
            claimsJSON = try encoder.encode(claims)
        } catch {
            throw CryptoError(.operationFailed, "could not encode the token's JSON")
        }
        let signingInput = Base64.encodeURL(Array(headerJSON)) + "." + Base64.encodeURL(Array(claimsJSON))
        let signature = try credentials.privateKey.signES256(message: signingInput.utf8)
        return AppStoreServerAPIToken(value: signingInput + "." + Base64.encodeURL(signature), bundleId: bundleId,
                                      issuedAt: issuedAt, expiresAt: issuedAt + lifetime)
    }

    private struct Header: Encodable {
        let alg: String
        let kid: String
        let typ: String
    }

    private struct Claims: Encodable {
        let iss: String
        let iat: Int64
        let exp: Int64
        let aud: String
        let bid: String
    }
}
