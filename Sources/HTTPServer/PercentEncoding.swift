/// Percent-decoding (RFC 3986 §2.1) of request paths and query arguments. libmicrohttpd is told to hand both over
/// as sent (`MHDCallbacks.keepEscaped`): its own decoding wrote `%00` as a NUL into a C string, so a path read
/// `/v1/purchases/key%00junk` as `/v1/purchases/key`, and a `%2F` inside a segment could not be told from a `/`.
public enum PercentEncoding {
    /// `text` with every `%XX` (two hex digits) decoded and anything else kept as written, as libmicrohttpd decodes;
    /// bytes that are not UTF-8 become U+FFFD. Nothing is cut at a decoded NUL.
    public static func decodeLeniently<Text: StringProtocol>(_ text: Text) -> String {
        decode(text, strict: false) ?? String(text)
    }

    /// `text` decoded, or nil when a `%` is not followed by two hex digits or the bytes are not UTF-8: for a path
    /// segment that names something (an id), where a guess would name something else.
    public static func decodeStrictly<Text: StringProtocol>(_ text: Text) -> String? {
        decode(text, strict: true)
    }

    private static func decode<Text: StringProtocol>(_ text: Text, strict: Bool) -> String? {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "%")) else { return String(text) }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%") {
                if index + 2 < bytes.count,
                    let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
                {
                    decoded.append(high << 4 | low)
                    index += 3
                    continue
                }
                if strict { return nil }
            }
            decoded.append(bytes[index])
            index += 1
        }
        if strict {
            return String(validating: decoded, as: UTF8.self)
        }
        return String(decoding: decoded, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
