import Glibc
import ServiceSupport

/// JWS header segments already seen → their decoded header and chain cache key, least recently used first out. Not
/// thread-safe by itself: `AppleSignedDataVerifier` keeps it in a `Locked`.
///
/// Every JWS the App Store signs with one certificate chain carries the same header segment (`alg` and `x5c`), so
/// a hit spares decoding the header's base64url and JSON and the two certificates' base64. It never widens what is
/// accepted: an entry is made only for a header that passed every header check (`alg` ES256, three `x5c`
/// certificates, each standard base64), the same bytes always decode to the same header, and the chain itself is
/// still looked up in (or validated into) the `VerifiedChainCache` at each payload's `signedDate`.
struct VerifiedHeaderCache {
    struct Entry {
        let header: JWSHeader
        let chainKey: VerifiedChainCache.Key
    }

    let capacity: Int
    private var entries: [ByteKey: Entry] = [:]
    /// Keys from least to most recently used (at most `capacity`).
    private var order: [ByteKey] = []

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    var count: Int { entries.count }

    mutating func lookup(_ segment: ArraySlice<UInt8>) -> Entry? {
        // The App Store signs with one chain at a time: the most recent header is almost always the one.
        if let last = order.last, last.equals(segment) { return entries[last] }
        let key = ByteKey(Array(segment))
        guard let entry = entries[key] else { return nil }
        if order.last != key, let index = order.firstIndex(of: key) {
            order.remove(at: index)
            order.append(key)
        }
        return entry
    }

    mutating func insert(_ entry: Entry, for segment: ArraySlice<UInt8>) {
        guard capacity > 0 else { return }
        let key = ByteKey(Array(segment))
        if entries.updateValue(entry, forKey: key) != nil {
            order.removeAll { $0 == key }
        } else if order.count >= capacity {
            entries.removeValue(forKey: order.removeFirst())
        }
        order.append(key)
    }
}

/// Bytes as a dictionary key, hashed as one block (an `[UInt8]` hashes element by element, which costs more than
/// the rest of a cache hit for kilobyte-long keys such as certificates and JWS headers).
struct ByteKey: Hashable {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// Whether `other` holds the same bytes (one `memcmp`).
    func equals(_ other: ArraySlice<UInt8>) -> Bool {
        guard bytes.count == other.count else { return false }
        return bytes.withUnsafeBytes { mine in
            other.withUnsafeBytes { theirs in
                mine.count == 0 || memcmp(mine.baseAddress!, theirs.baseAddress!, mine.count) == 0
            }
        }
    }
}
