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

    /// `encode` for the message types, which hold only strings, integers, booleans and arrays and objects of them:
    /// encoding cannot fail.
    public static func encodeMessage<T: Encodable>(_ value: T) -> [UInt8] {
        do {
            return try encode(value)
        } catch {
            preconditionFailure("encoding \(T.self) failed: \(error)")
        }
    }

    /// A `decode` error in one line without the data itself (which may hold a receipt): what a DLQ record says.
    public static func describe(_ error: any Error) -> String {
        guard let decoding = error as? DecodingError else { return "not valid JSON" }
        switch decoding {
        case .keyNotFound(let key, _): return "field \(key.stringValue) is missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "field \(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty
                ? "not valid JSON" : "field \(context.codingPath.map(\.stringValue).joined(separator: ".")) is invalid"
        @unknown default: return "not decodable"
        }
    }
}
