/// Who is calling the receipts API, as far as results are concerned (`INGEST_API_KEYS`).
public enum Caller: Sendable, Hashable {
    /// No keys configured, or an unnamed key: writes submissions without `client_id` and sees every result.
    case unrestricted
    /// A named key: writes its name as `client_id` and sees only results (and pending submissions) carrying it.
    case client(String)

    /// The `client_id` this caller's submissions carry.
    public var clientId: String? {
        switch self {
        case .unrestricted: nil
        case .client(let name): name
        }
    }

    /// Whether a result or pending submission with `clientId` may be shown to this caller.
    public func maySee(clientId: String?) -> Bool {
        switch self {
        case .unrestricted: true
        case .client(let name): clientId == name
        }
    }
}
