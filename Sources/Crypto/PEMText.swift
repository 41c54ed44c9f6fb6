/// PEM armour (RFC 7468) around DER: base64 in 64-character lines between BEGIN and END lines.
enum PEMText {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ der: [UInt8], label: String) -> String {
        let base64 = Array(standardBase64(der).utf8)
        var text = "-----BEGIN \(label)-----\n"
        var index = 0
        while index < base64.count {
            let end = min(index + 64, base64.count)
            text += String(decoding: base64[index..<end], as: UTF8.self) + "\n"
            index = end
        }
        return text + "-----END \(label)-----\n"
    }

    /// Standard base64 with padding.
    static func standardBase64(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output += [alphabet[Int(value >> 18 & 63)], alphabet[Int(value >> 12 & 63)],
                       alphabet[Int(value >> 6 & 63)], alphabet[Int(value & 63)]]
            index += 3
        }
        let rest = bytes.count - index
        if rest == 1 {
            let value = UInt32(bytes[index]) << 16
            output += [alphabet[Int(value >> 18 & 63)], alphabet[Int(value >> 12 & 63)], UInt8(ascii: "="), UInt8(ascii: "=")]
        } else if rest == 2 {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            output += [alphabet[Int(value >> 18 & 63)], alphabet[Int(value >> 12 & 63)],
                       alphabet[Int(value >> 6 & 63)], UInt8(ascii: "=")]
        }
        return String(decoding: output, as: UTF8.self)
    }
}
