import ServiceRuntime

/// Checks `Authorization: Bearer <key>` against `INGEST_API_KEYS` (the services' one `BearerKeys`, constant time)
/// and says who the caller is as far as results are concerned.
public struct APIKeyAuthenticator: Sendable {
    private let keys: BearerKeys

    public init(keys: [APIKey]) {
        self.keys = BearerKeys(keys)
    }

    /// No keys configured: every request is allowed, as `.unrestricted`.
    public var isOpen: Bool { keys.isOpen }

    /// Whether some configured key is named (then results are shown per client).
    public var hasNamedKeys: Bool { keys.hasNamedKeys }

    /// The caller a request with this `Authorization` header value is, or nil when it may not proceed.
    public func authenticate(authorizationHeader: String?) -> Caller? {
        switch keys.match(authorizationHeader: authorizationHeader) {
        case nil: nil
        case .open: .unrestricted
        case .key(let key): key.name.map { .client($0) } ?? .unrestricted
        }
    }

    /// Whether a request with this `Authorization` header value may proceed.
    public func authorizes(authorizationHeader: String?) -> Bool {
        authenticate(authorizationHeader: authorizationHeader) != nil
    }
}
