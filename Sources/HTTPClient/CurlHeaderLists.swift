import CCurl

/// The libcurl header lists (`curl_slist`) of the requests in flight, built once per distinct set of header lines
/// and shared: a client sends the same few sets over and over (verifyReceipt's two content headers; the Server
/// API's bearer token, which changes only when a token is renewed).
///
/// Up to `capacity` sets stay cached while unused. A set pushed out of the cache, or any set beyond it, is freed as
/// soon as the last transfer using it has left the multi handle, so memory stays bounded however many distinct sets
/// pass through (many bundle ids, renewed tokens).
///
/// Every list also carries `standardLines` (the client's User-Agent and Accept-Encoding) unless the request names
/// that header itself: libcurl then sends ours instead of formatting its own for each request (its printf-style
/// formatter costs ~115 instructions per byte, and both lines were formatted twice per request: ~8,000
/// instructions per transfer, bench/appstore-client.sh under callgrind).
///
/// Invariant: used by the multi loop's thread only (it is part of the loop's state); `acquire` and `release` calls
/// are paired, one per transfer that was given a list.
struct CurlHeaderLists {
    private struct Entry {
        let lines: [String]
        let list: UnsafeMutablePointer<curl_slist>?
        var users: Int
    }

    let capacity: Int
    /// Header lines every list carries unless the request's own lines name the same header.
    let standardLines: [String]
    /// Most recently used last.
    private var cached: [Entry] = []
    /// Lists pushed out of `cached` while transfers still used them: users left.
    private var retired: [UnsafeMutablePointer<curl_slist>: Int] = [:]

    init(capacity: Int = 16, standardLines: [String] = []) {
        self.capacity = max(1, capacity)
        self.standardLines = standardLines
    }

    /// Lists currently allocated (cached or still in use after eviction); for tests.
    var allocatedCount: Int { cached.count + retired.count }

    /// The list for `lines`, counted as used until `release`.
    mutating func acquire(_ lines: [String]) -> UnsafeMutablePointer<curl_slist>? {
        if let index = cached.firstIndex(where: { $0.lines == lines }) {
            cached[index].users += 1
            let list = cached[index].list
            // Least recently used first, so eviction takes the coldest set (a no-op with a single set).
            if index != cached.count - 1 { cached.append(cached.remove(at: index)) }
            return list
        }
        var list: UnsafeMutablePointer<curl_slist>?
        // "Expect:" stops libcurl from waiting for 100-continue before sending large bodies.
        for line in lines + standardLines.filter({ !Self.names(lines, headerOf: $0) }) + ["Expect:"] {
            list = curl_slist_append(list, line)
        }
        if cached.count >= capacity {
            let evicted = cached.removeFirst()
            retire(evicted)
        }
        cached.append(Entry(lines: lines, list: list, users: 1))
        return list
    }

    /// One transfer stopped using `list`.
    mutating func release(_ list: UnsafeMutablePointer<curl_slist>?) {
        guard let list else { return }
        if let index = cached.firstIndex(where: { $0.list == list }) {
            cached[index].users -= 1
            return
        }
        guard let users = retired[list] else { return }
        if users <= 1 {
            retired.removeValue(forKey: list)
            curl_slist_free_all(list)
        } else {
            retired[list] = users - 1
        }
    }

    /// Frees every list; only when no transfer uses any (the loop's shutdown).
    mutating func freeAll() {
        for entry in cached { curl_slist_free_all(entry.list) }
        for list in retired.keys { curl_slist_free_all(list) }
        cached.removeAll()
        retired.removeAll()
    }

    /// Whether `lines` name the header of `line` (names compare without regard to ASCII case).
    static func names(_ lines: [String], headerOf line: String) -> Bool {
        guard let colon = line.utf8.firstIndex(of: UInt8(ascii: ":")) else { return false }
        let name = line.utf8[..<colon]
        return lines.contains { other in
            guard let otherColon = other.utf8.firstIndex(of: UInt8(ascii: ":")) else { return false }
            return other.utf8[..<otherColon].elementsEqual(name) { lowercased($0) == lowercased($1) }
        }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
    }

    /// The lines a client with `userAgent` sends with every request: its User-Agent (none when empty, as libcurl
    /// does) and the Accept-Encoding libcurl would send for `CURLOPT_ACCEPT_ENCODING ""` (every encoding this
    /// libcurl decodes, in libcurl's order). The transfers keep `CURLOPT_ACCEPT_ENCODING` set, which is what makes
    /// libcurl decode a compressed answer.
    static func standardLines(userAgent: String) -> [String] {
        var lines: [String] = []
        if !userAgent.isEmpty { lines.append("User-Agent: \(userAgent)") }
        lines.append("Accept-Encoding: \(acceptedEncodings)")
        return lines
    }

    /// libcurl's list for `CURLOPT_ACCEPT_ENCODING ""` (`Curl_all_content_encodings`), from its build features.
    static let acceptedEncodings: String = {
        // CURLVERSION_NOW (a macro Swift does not import) is CURLVERSION_ELEVENTH in this libcurl's headers.
        let features = curl_version_info(CURLVERSION_ELEVENTH)?.pointee.features ?? 0
        var encodings: [String] = []
        if features & CURL_VERSION_LIBZ != 0 { encodings += ["deflate", "gzip"] }
        if features & CURL_VERSION_BROTLI != 0 { encodings.append("br") }
        if features & CURL_VERSION_ZSTD != 0 { encodings.append("zstd") }
        return encodings.isEmpty ? "identity" : encodings.joined(separator: ", ")
    }()

    private mutating func retire(_ entry: Entry) {
        guard let list = entry.list else { return }
        if entry.users == 0 {
            curl_slist_free_all(list)
        } else {
            retired[list] = entry.users
        }
    }
}
