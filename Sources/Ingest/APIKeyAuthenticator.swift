import Foundation

/// Checks `Authorization: Bearer <key>` against the configured keys in constant time, and says who the caller is.
///
/// The comparison touches every byte of every configured key whatever the presented key is, so response timing
/// does not reveal how much of a key matched or which key was close.
public struct APIKeyAuthenticator: Sendable {
    private let keys: [[UInt8]]
    private let names: [String?]

    public init(keys: [APIKey]) {
        self.keys = keys.map { Array($0.key.utf8) }
        self.names = keys.map(\.name)
    }

    /// No keys configured: every request is allowed, as `.unrestricted`.
    public var isOpen: Bool { keys.isEmpty }

    /// Whether some configured key is named (then results are shown per client).
    public var hasNamedKeys: Bool { names.contains { $0 != nil } }

    /// The caller a request with this `Authorization` header value is, or nil when it may not proceed.
    public func authenticate(authorizationHeader: String?) -> Caller? {
        if isOpen { return .unrestricted }
        guard let header = authorizationHeader else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let presented = Array(parts[1].trimmingCharacters(in: .whitespaces).utf8)
        // Position + 1 of the matching key (keys are unique), accumulated without branching on the comparison.
        var matched = 0
        for (index, key) in keys.enumerated() {
            matched |= Int(Self.constantTimeEqual(presented, key)) * (index + 1)
        }
        guard matched > 0 else { return nil }
        return names[matched - 1].map { .client($0) } ?? .unrestricted
    }

    /// Whether a request with this `Authorization` header value may proceed.
    public func authorizes(authorizationHeader: String?) -> Bool {
        authenticate(authorizationHeader: authorizationHeader) != nil
    }

    /// 1 when equal, else 0; the time depends only on the lengths.
    static func constantTimeEqual(_ presented: [UInt8], _ key: [UInt8]) -> UInt8 {
        var difference = UInt64(presented.count ^ key.count)
        for index in 0..<key.count {
            let byte = index < presented.count ? presented[index] : 0
            difference |= UInt64(byte ^ key[index])
        }
        return difference == 0 ? 1 : 0
    }
}
