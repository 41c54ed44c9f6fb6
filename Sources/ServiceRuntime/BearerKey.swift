import Foundation
import ServiceSupport

/// One entry of a bearer-key setting (`INGEST_API_KEYS`, `LEDGER_API_KEYS`): a key accepted as
/// `Authorization: Bearer <key>`, optionally named. One syntax for every service:
///
/// - `key`: an entry without `:` is the key, whole.
/// - `name:key`: when an entry contains `:`, the text before the first `:` is the name (1 to 64 of
///   `A-Z a-z 0-9 . _ -`) and everything after it is the key, which may itself contain `:` (`ops:a:b` is the key
///   `a:b`). A key that contains `:` is therefore always given with a name; an entry whose text before the first
///   `:` is no name is refused (a settings error naming the entry's position), never cut at the colon.
///
/// The same name may appear on several entries (rotating a client's key); the same key may not appear under two
/// names.
public struct BearerKey: Sendable, Equatable {
    /// The client's name (the ingest writes it as `client_id`); nil for an unnamed key.
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

    /// Parses the entries of `variable` (already split at commas, blanks dropped: `Settings.list`).
    /// - Throws: `ConfigurationError` naming the entry by position (never by its key) and what is wrong.
    public static func parseList(_ entries: [String], variable: String) throws(ConfigurationError) -> [BearerKey] {
        var keys: [BearerKey] = []
        var nameOfKey: [String: String?] = [:]
        for (index, entry) in entries.enumerated() {
            let position = "entry \(index + 1)"
            let parsed: BearerKey
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
                parsed = BearerKey(name: String(name), key: key)
            } else {
                parsed = BearerKey(key: entry)
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

    /// The keys of `variable` in `settings` (see `parseList`).
    public static func fromSettings(_ settings: Settings, variable: String) throws(ConfigurationError) -> [BearerKey] {
        try parseList(settings.list(variable), variable: variable)
    }
}

/// Checks `Authorization: Bearer <key>` against the configured keys in constant time and says which key matched.
///
/// The comparison touches every byte of every configured key whatever the presented key is, so response timing
/// does not reveal how much of a key matched or which key was close.
public struct BearerKeys: Sendable {
    /// What `match` found.
    public enum Match: Sendable, Equatable {
        /// No keys are configured: every request may proceed.
        case open
        /// This configured key was presented.
        case key(BearerKey)
    }

    public let keys: [BearerKey]
    private let bytes: [[UInt8]]

    public init(_ keys: [BearerKey]) {
        self.keys = keys
        self.bytes = keys.map { Array($0.key.utf8) }
    }

    /// No keys configured: every request is allowed.
    public var isOpen: Bool { keys.isEmpty }

    /// Whether some configured key is named.
    public var hasNamedKeys: Bool { keys.contains { $0.name != nil } }

    /// The match for an `Authorization` header value (`Bearer <key>`, the scheme case-insensitive), or nil when the
    /// request may not proceed.
    public func match(authorizationHeader: String?) -> Match? {
        if isOpen { return .open }
        guard let header = authorizationHeader else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let presented = Array(parts[1].trimmingCharacters(in: .whitespaces).utf8)
        // Position + 1 of the matching key (keys are unique), accumulated without branching on the comparison.
        var matched = 0
        for (index, key) in bytes.enumerated() {
            matched |= Int(Self.constantTimeEqual(presented, key)) * (index + 1)
        }
        guard matched > 0 else { return nil }
        return .key(keys[matched - 1])
    }

    /// Whether a request with this `Authorization` header value may proceed.
    public func authorizes(authorizationHeader: String?) -> Bool {
        match(authorizationHeader: authorizationHeader) != nil
    }

    /// 1 when equal, else 0; the time depends only on the lengths.
    public static func constantTimeEqual(_ presented: [UInt8], _ key: [UInt8]) -> UInt8 {
        var difference = UInt64(presented.count ^ key.count)
        for index in 0..<key.count {
            let byte = index < presented.count ? presented[index] : 0
            difference |= UInt64(byte ^ key[index])
        }
        return difference == 0 ? 1 : 0
    }
}
