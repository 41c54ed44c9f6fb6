/// Minimal JSON text helpers for hot paths that build JSON by hand (log lines, metrics, small responses).
public enum JSONText {
    /// `value` as a JSON string literal, quotes included: `"`, `\` and the control characters escaped (`\n`, `\r`,
    /// `\t`, the others as `\u00xx`), everything else as it is.
    ///
    /// Works on the UTF-8 bytes (every byte that needs escaping is ASCII, and no byte of a multi-byte character is
    /// one): a string with nothing to escape, the usual case (ids in every 202 and log line), is copied once.
    public static func quoted(_ value: String) -> String {
        var value = value
        return value.withUTF8 { utf8 in
            var escapes = 0
            if needsEscaping(utf8) {
                for byte in utf8 where needsEscape(byte) { escapes += 1 }
            }
            // At most 6 bytes (`\u001f`) for each byte escaped, 2 for the quotes.
            let capacity = utf8.count + 2 + 5 * escapes
            return String(unsafeUninitializedCapacity: capacity) { out in
                var count = 0
                func put(_ byte: UInt8) {
                    out[count] = byte
                    count += 1
                }
                put(UInt8(ascii: "\""))
                if escapes == 0 {
                    _ = UnsafeMutableBufferPointer(rebasing: out[1...]).initialize(from: utf8)
                    count += utf8.count
                } else {
                    for byte in utf8 {
                        guard needsEscape(byte) else {
                            put(byte)
                            continue
                        }
                        put(UInt8(ascii: "\\"))
                        switch byte {
                        case UInt8(ascii: "\""), UInt8(ascii: "\\"): put(byte)
                        case UInt8(ascii: "\n"): put(UInt8(ascii: "n"))
                        case UInt8(ascii: "\r"): put(UInt8(ascii: "r"))
                        case UInt8(ascii: "\t"): put(UInt8(ascii: "t"))
                        default:
                            put(UInt8(ascii: "u"))
                            put(UInt8(ascii: "0"))
                            put(UInt8(ascii: "0"))
                            put(hexDigit(byte >> 4))
                            put(hexDigit(byte & 0x0F))
                        }
                    }
                }
                put(UInt8(ascii: "\""))
                return count
            }
        }
    }

    /// Whether some byte of `utf8` must be escaped in a JSON string (a quote, a backslash or a control character):
    /// eight bytes at a time, as `JSONParser.scanString` looks for its stops (a byte of `x - 0x01...01 * n` borrows
    /// into its high bit, where `x` has none, exactly when some byte of `x` is below `n`; a byte equal to `c` is a
    /// zero byte of `x ^ c...c`).
    static func needsEscaping(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = utf8.baseAddress else { return false }
        let count = utf8.count
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        var offset = 0
        while offset + 8 <= count {
            let word = UnsafeRawPointer(base + offset).loadUnaligned(as: UInt64.self)
            let quote = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
            let backslash = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
            let stops =
                ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
            if stops & highBits != 0 { return true }
            offset += 8
        }
        while offset < count {
            if needsEscape(base[offset]) { return true }
            offset += 1
        }
        return false
    }

    @inline(__always)
    static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// Lower-case, as `String(_:radix: 16)` writes it.
    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
