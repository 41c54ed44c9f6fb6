/// Lowercase hexadecimal text of bytes (fingerprints, digests in log-safe form).
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// `bytes` as lowercase hexadecimal, two characters per byte, optionally separated (":" for fingerprints).
    public static func encode(_ bytes: some Sequence<UInt8>, separator: String = "") -> String {
        var text: [UInt8] = []
        // Room for the common case (a digest) at once, not grown append by append.
        text.reserveCapacity(bytes.underestimatedCount * (2 + separator.utf8.count))
        let separatorBytes = Array(separator.utf8)
        for (index, byte) in bytes.enumerated() {
            if index > 0 { text.append(contentsOf: separatorBytes) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
