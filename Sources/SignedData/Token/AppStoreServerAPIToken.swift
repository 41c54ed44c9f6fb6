/// A signed App Store Server API bearer token (ES256 JWT). Its `description` never shows the token itself.
public struct AppStoreServerAPIToken: Sendable, Equatable, CustomStringConvertible {
    /// The compact JWT. Send it as `Authorization: Bearer <value>`; never log it.
    public let value: String
    public let bundleId: String
    /// `iat`, seconds since 1970.
    public let issuedAt: Int64
    /// `exp`, seconds since 1970.
    public let expiresAt: Int64

    /// The `Authorization` header value.
    public var authorizationHeader: String { "Bearer " + value }

    public var description: String {
        "App Store Server API token for \(bundleId), issued at \(issuedAt), expires at \(expiresAt) (value redacted)"
    }
}
