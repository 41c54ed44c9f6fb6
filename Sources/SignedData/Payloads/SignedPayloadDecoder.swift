import Foundation

/// JSON decoding of verified payloads into the tolerant payload types.
public enum SignedPayloadDecoder {
    /// Decodes `bytes` as `type`.
    ///
    /// - Throws: `SignedDataError.Kind.payloadNotJSON` when the bytes are not JSON of the expected overall shape.
    ///   Field-level oddities never throw: the payload types keep unknown values and mark unreadable money fields.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws(SignedDataError) -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(bytes))
        } catch {
            throw SignedDataError(.payloadNotJSON, "the payload is not a JSON object readable as \(T.self)")
        }
    }
}
