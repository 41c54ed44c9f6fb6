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
        if let decoded = text.withContiguousStorageIfAvailable({ decode(contiguous: $0, table: table) }) {
            return decoded
        }
        return Array(text).withUnsafeBufferPointer { decode(contiguous: $0, table: table) }
    }

    /// Four characters to three bytes at a time into a buffer of the exact size (notification payloads are ~10 KB).
    private static func decode(contiguous input: UnsafeBufferPointer<UInt8>, table: [UInt8]) -> [UInt8]? {
        let count = input.count
        let remainder = count % 4
        guard remainder != 1 else { return nil }
        let outputCount = count / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
        var output = [UInt8](repeating: 0, count: outputCount)
        let valid = table.withUnsafeBufferPointer { table in
            output.withUnsafeMutableBufferPointer { output -> Bool in
                // `invalid` (0xff) has the top bits set; every valid value fits 6 bits.
                var inputIndex = 0
                var outputIndex = 0
                while inputIndex + 4 <= count {
                    let a = table[Int(input[inputIndex])]
                    let b = table[Int(input[inputIndex + 1])]
                    let c = table[Int(input[inputIndex + 2])]
                    let d = table[Int(input[inputIndex + 3])]
                    guard (a | b | c | d) & 0xc0 == 0 else { return false }
                    output[outputIndex] = a << 2 | b >> 4
                    output[outputIndex + 1] = b << 4 | c >> 2
                    output[outputIndex + 2] = c << 6 | d
                    inputIndex += 4
                    outputIndex += 3
                }
                switch remainder {
                case 2:
                    let a = table[Int(input[inputIndex])]
                    let b = table[Int(input[inputIndex + 1])]
                    // Unused low bits of the last character must be zero (canonical encoding).
                    guard (a | b) & 0xc0 == 0, b & 0x0f == 0 else { return false }
                    output[outputIndex] = a << 2 | b >> 4
                case 3:
                    let a = table[Int(input[inputIndex])]
                    let b = table[Int(input[inputIndex + 1])]
                    let c = table[Int(input[inputIndex + 2])]
                    guard (a | b | c) & 0xc0 == 0, c & 0x03 == 0 else { return false }
                    output[outputIndex] = a << 2 | b >> 4
                    output[outputIndex + 1] = b << 4 | c >> 2
                default:
                    break
                }
                return true
            }
        }
        return valid ? output : nil
    }

    /// Unpadded base64url.
    static func encodeURL(_ bytes: some Collection<UInt8>) -> String {
        encode(bytes, alphabet: urlAlphabet, pad: false)
    }

    /// Standard base64 with padding.
    static func encodeStandard(_ bytes: some Collection<UInt8>) -> String {
        encode(bytes, alphabet: standardAlphabet, pad: true)
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
