import CCurl

/// The libcurl header lists (`curl_slist`) of the requests in flight, built once per distinct set of header lines
/// and shared: a client sends the same few sets over and over (verifyReceipt's two content headers; the Server
/// API's bearer token, which changes only when a token is renewed).
///
/// Up to `capacity` sets stay cached while unused. A set pushed out of the cache, or any set beyond it, is freed as
/// soon as the last transfer using it has left the multi handle, so memory stays bounded however many distinct sets
/// pass through (many bundle ids, renewed tokens).
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
    /// Most recently used last.
    private var cached: [Entry] = []
    /// Lists pushed out of `cached` while transfers still used them: users left.
    private var retired: [UnsafeMutablePointer<curl_slist>: Int] = [:]

    init(capacity: Int = 16) {
        self.capacity = max(1, capacity)
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
        for line in lines + ["Expect:"] {
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

    private mutating func retire(_ entry: Entry) {
        guard let list = entry.list else { return }
        if entry.users == 0 {
            curl_slist_free_all(list)
        } else {
            retired[list] = entry.users
        }
    }
}
