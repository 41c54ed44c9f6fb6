/// Lowercase hexadecimal text of bytes (fingerprints, digests in log-safe form).
public enum Hex {
    /// `bytes` as lowercase hexadecimal, two characters per byte, optionally separated (":" for fingerprints).
    /// Written straight into the string's storage (a submission's fingerprint is encoded once per POST at the ingest).
    public static func encode(_ bytes: some Sequence<UInt8>, separator: String = "") -> String {
        let bytes = Array(bytes)
        guard !bytes.isEmpty else { return "" }
        let separatorBytes = Array(separator.utf8)
        let length = bytes.count * 2 + (bytes.count - 1) * separatorBytes.count
        return String(unsafeUninitializedCapacity: length) { text in
            var position = 0
            for (index, byte) in bytes.enumerated() {
                if index > 0 {
                    for separatorByte in separatorBytes {
                        text[position] = separatorByte
                        position += 1
                    }
                }
                text[position] = digit(byte >> 4)
                text[position + 1] = digit(byte & 0x0f)
                position += 2
            }
            return position
        }
    }

    @inline(__always)
    private static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
