import Crypto
import ServiceSupport

/// Verified (leaf, intermediate) pairs, keyed by their `x5c` base64 text (one-to-one with their DER under the strict
/// decoder) → the leaf's key and the chain's validity window, least recently used
/// first out. Not thread-safe by itself: `AppleSignedDataVerifier` keeps it in a `Locked`.
///
/// An entry never widens what is accepted: a hit is used only when the new payload's `signedDate` falls inside the
/// window in which the whole chain validated (`CertificateChain.isValid`); otherwise the chain is validated again at
/// that date, which reports the precise error.
struct VerifiedChainCache {
    struct Key: Hashable {
        let leaf: [UInt8]
        let intermediate: [UInt8]

        /// The certificates' bytes in bulk: the synthesized hash fed ~2 KB to the hasher one byte at a time on every
        /// verification.
        func hash(into hasher: inout Hasher) {
            leaf.withUnsafeBytes { hasher.combine(bytes: $0) }
            hasher.combine(leaf.count)
            intermediate.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    struct Entry {
        let publicKey: ECPublicKey
        let chain: CertificateChain
        let leafFingerprint: [UInt8]
    }

    let capacity: Int
    private var entries: [Key: Entry] = [:]
    /// Keys from least to most recently used (at most `capacity`, so linear updates are cheap).
    private var order: [Key] = []

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    var count: Int { entries.count }

    /// The cached chains, least recently used first.
    var chains: [CertificateChain] { order.compactMap { entries[$0]?.chain } }

    /// The entry for `key` if its chain is valid at `epochSeconds`; marks it most recently used.
    mutating func lookup(_ key: Key, atEpochSeconds epochSeconds: Int64) -> Entry? {
        guard let entry = entries[key], entry.chain.isValid(atEpochSeconds: epochSeconds) else { return nil }
        if order.last != key, let index = order.firstIndex(of: key) {
            order.remove(at: index)
            order.append(key)
        }
        return entry
    }

    mutating func insert(_ entry: Entry, for key: Key) {
        guard capacity > 0 else { return }
        if entries.updateValue(entry, forKey: key) != nil {
            order.removeAll { $0 == key }
        } else if order.count >= capacity {
            entries.removeValue(forKey: order.removeFirst())
        }
        order.append(key)
    }
}
