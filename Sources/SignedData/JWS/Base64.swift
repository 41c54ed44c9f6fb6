/// Strict base64 for JWS: base64url without padding for the three segments (RFC 7515 §2), standard base64 with
/// padding for `x5c` entries (RFC 7515 §4.1.6). Anything outside the alphabet, a wrong length or non-zero unused
/// bits is refused (nil), so one value has exactly one accepted text.
enum Base64 {
    private static let invalid: UInt8 = 0xff
    private static let urlTable = table("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    private static let standardTable = table("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    private static func table(_ alphabet: String) -> [UInt8] {
        var table = [UInt8](repeating: invalid, count: 256)
        for (index, character) in alphabet.utf8.enumerated() { table[Int(character)] = UInt8(index) }
        return table
    }

    /// Decodes unpadded base64url.
    static func decodeURL(_ text: some Collection<UInt8>) -> [UInt8]? {
        decode(text, table: urlTable)
    }

    /// Decodes standard base64; padding is required when the length is not a multiple of 4 characters.
    static func decodeStandard(_ text: some Collection<UInt8>) -> [UInt8]? {
        var body = Array(text)
        guard body.count % 4 == 0 else { return nil }
        var padding = 0
        while padding < 2, body.last == UInt8(ascii: "=") {
            body.removeLast()
            padding += 1
        }
        return decode(body, table: standardTable)
    }

    private static func decode(_ text: some Collection<UInt8>, table: [UInt8]) -> [UInt8]? {
        if let decoded = text.withContiguousStorageIfAvailable({ decode(buffer: $0, table: table) }) {
            return decoded
        }
        return Array(text).withUnsafeBufferPointer { decode(buffer: $0, table: table) }
    }

    /// Four characters to three bytes at a time (a JWS carries ~5 KB of base64 per verification).
    private static func decode(buffer text: UnsafeBufferPointer<UInt8>, table: [UInt8]) -> [UInt8]? {
        let count = text.count
        guard count % 4 != 1 else { return nil }
        let full = count / 4 * 4
        let rest = count - full
        let outputCount = full / 4 * 3 + (rest == 0 ? 0 : rest - 1)
        var valid = true
        let output = table.withUnsafeBufferPointer { table -> [UInt8] in
            [UInt8](unsafeUninitializedCapacity: outputCount) { out, initialized in
                var input = 0
                var written = 0
                while input < full {
                    let a = table[Int(text[input])], b = table[Int(text[input + 1])]
                    let c = table[Int(text[input + 2])], d = table[Int(text[input + 3])]
                    // Every valid value is below 64; `invalid` (0xff) has the top bits set.
                    guard (a | b | c | d) & 0xc0 == 0 else {
                        valid = false
                        break
                    }
                    let value = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    out[written] = UInt8(truncatingIfNeeded: value >> 16)
                    out[written + 1] = UInt8(truncatingIfNeeded: value >> 8)
                    out[written + 2] = UInt8(truncatingIfNeeded: value)
                    input += 4
                    written += 3
                }
                if valid, rest >= 2 {
                    let a = table[Int(text[full])], b = table[Int(text[full + 1])]
                    let c = rest == 3 ? table[Int(text[full + 2])] : 0
                    if (a | b | c) & 0xc0 != 0 {
                        valid = false
                    } else if rest == 2 {
                        let value = UInt32(a) << 6 | UInt32(b)
                        // Unused low bits of the last character must be zero (canonical encoding).
                        valid = value & 0xf == 0
                        out[written] = UInt8(truncatingIfNeeded: value >> 4)
                        written += 1
                    } else {
                        let value = UInt32(a) << 12 | UInt32(b) << 6 | UInt32(c)
                        valid = value & 0x3 == 0
                        out[written] = UInt8(truncatingIfNeeded: value >> 10)
                        out[written + 1] = UInt8(truncatingIfNeeded: value >> 2)
                        written += 2
                    }
                }
                initialized = valid ? written : 0
            }
        }
        return valid ? output : nil
    }

    /// Unpadded base64url.
    static func encodeURL(_ bytes: some Collection<UInt8>) -> String {
        encode(bytes, alphabet: urlAlphabet, pad: false)
    }

    private static func encode(_ bytes: some Collection<UInt8>, alphabet: [UInt8], pad: Bool) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = accumulator << 8 | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                output.append(alphabet[Int(accumulator >> UInt32(bits) & 63)])
            }
            accumulator &= (1 << UInt32(bits)) - 1
        }
        if bits > 0 { output.append(alphabet[Int(accumulator << UInt32(6 - bits) & 63)]) }
        if pad { while output.count % 4 != 0 { output.append(UInt8(ascii: "=")) } }
        return String(decoding: output, as: UTF8.self)
    }
}
