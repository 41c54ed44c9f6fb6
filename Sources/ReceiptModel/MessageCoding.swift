import Foundation

/// The JSON encoding shared by every message the services write: compact, keys sorted (so the same message is
/// always the same bytes, which keeps at-least-once duplicates byte-identical and diffs readable).
public enum MessageCoding {
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try JSONDecoder().decode(type, from: Data(bytes))
    }
}
