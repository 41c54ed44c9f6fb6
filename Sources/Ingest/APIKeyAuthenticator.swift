import Foundation

/// Checks `Authorization: Bearer <key>` against the configured keys in constant time.
///
/// The comparison touches every byte of every configured key whatever the presented key is, so response timing
/// does not reveal how much of a key matched or which key was close.
public struct APIKeyAuthenticator: Sendable {
    private let keys: [[UInt8]]

    public init(keys: [String]) {
        self.keys = keys.map { Array($0.utf8) }
    }

    /// No keys configured: every request is allowed.
    public var isOpen: Bool { keys.isEmpty }

    /// Whether a request with this `Authorization` header value may proceed.
    public func authorizes(authorizationHeader: String?) -> Bool {
        if isOpen { return true }
        guard let header = authorizationHeader else { return false }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return false }
        let presented = Array(parts[1].trimmingCharacters(in: .whitespaces).utf8)
        var matched: UInt8 = 0
        for key in keys {
            matched |= Self.constantTimeEqual(presented, key)
        }
        return matched == 1
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
