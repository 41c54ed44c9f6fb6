import COpenSSL

/// OpenSSL's per-thread error queue. Every failing call path reads and clears it, so an error left by one operation
/// never shows up in the message of the next one on the same thread.
package enum OpenSSLErrorQueue {
    /// `context`, then ": " and the queued errors (most recent last), or `context` alone when the queue is empty.
    static func describe(_ context: String) -> String {
        var texts: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if texts.count < 4 {
                var buffer = [CChar](repeating: 0, count: 256)
                ERR_error_string_n(code, &buffer, buffer.count)
                texts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        return texts.isEmpty ? context : context + ": " + texts.joined(separator: "; ")
    }

    /// Drops whatever is queued (after a failure that is reported by other means).
    package static func clear() {
        ERR_clear_error()
    }
}
