import Foundation

/// Standard base64 of raw bytes (DLQ records carry original message bytes this way).
public enum Base64 {
    public static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
    }

    public static func decode(_ text: String) -> [UInt8]? {
        Data(base64Encoded: text).map { Array($0) }
    }
}
