import ServiceSupport

/// One entry of `INGEST_API_KEYS`: a key accepted as `Authorization: Bearer <key>`, optionally named.
///
/// Entry syntax: `name:key` or `key`. When an entry contains `:`, the text before the first `:` is the name (it must
/// be 1 to 64 of `A-Z a-z 0-9 . _ -`) and everything after it is the key, which may itself contain `:`. A key that
/// contains `:` must therefore always be given with a name. The same name may appear on several entries (rotating a
/// client's key); the same key may not appear under two names.
public struct APIKey: Sendable, Equatable {
    /// The client's name, written as `client_id` into its submissions; nil for an unnamed key.
    public var name: String?
    public var key: String

    public init(name: String? = nil, key: String) {
        self.name = name
        self.key = key
    }

    /// The longest accepted name.
    public static let maximumNameLength = 64

    /// `[A-Za-z0-9._-]{1,64}`.
    public static func isValidName(_ name: some StringProtocol) -> Bool {
        !name.isEmpty && name.utf8.count <= maximumNameLength
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                    true
                default:
                    false
                }
            }
    }

    /// Parses the entries of `INGEST_API_KEYS` (already split at commas, blanks dropped).
    /// - Throws: `ConfigurationError` naming the entry by position (never by its key) and what is wrong.
    public static func parseList(_ entries: [String], variable: String = "INGEST_API_KEYS")
        throws(ConfigurationError) -> [APIKey]
    {
        var keys: [APIKey] = []
        var nameOfKey: [String: String?] = [:]
        for (index, entry) in entries.enumerated() {
            let position = "entry \(index + 1)"
            let parsed: APIKey
            if let colon = entry.firstIndex(of: ":") {
                let name = entry[..<colon]
                let key = String(entry[entry.index(after: colon)...])
                guard isValidName(name) else {
                    throw ConfigurationError(
                        variable: variable,
                        problem: "\(position): the name before ':' must be 1 to \(maximumNameLength) of "
                            + "A-Z a-z 0-9 . _ - (a key containing ':' needs a name: name:key)")
                }
                guard !key.isEmpty else {
                    throw ConfigurationError(
                        variable: variable, problem: "\(position): the key after '\(name):' is empty")
                }
                parsed = APIKey(name: String(name), key: key)
            } else {
                parsed = APIKey(key: entry)
            }
            if let previous = nameOfKey[parsed.key] {
                guard previous == parsed.name else {
                    throw ConfigurationError(
                        variable: variable, problem: "\(position): the same key is listed under two names")
                }
                continue
            }
            nameOfKey[parsed.key] = parsed.name
            keys.append(parsed)
        }
        return keys
    }
}
