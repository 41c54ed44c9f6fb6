import Foundation

/// Reading a compact JWS without verifying it: its shape, and its header and payload as JSON objects. Only for
/// routing (a Kafka key) and for refusing what cannot be a JWS at all; the verifier checks chain and signature.
enum UnverifiedJWS {
    /// Why a text is not a compact JWS with an ES256 header.
    enum Problem: Error, Equatable {
        case notCompact
        case unreadableHeader
        case unsupportedAlgorithm(String?)
    }

    /// The three segments of `text`, each non-empty base64url (no padding, no whitespace). Split from one contiguous
    /// copy of the bytes: walking `String.UTF8View` by index cost a fifth of a notification's CPU.
    static func segments(_ text: String) -> [ArraySlice<UInt8>]? {
        let segments = Array(text.utf8).split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3, segments.allSatisfy({ !$0.isEmpty && $0.allSatisfy(isBase64URL) }) else {
            return nil
        }
        return segments
    }

    /// Checks that `text` is three base64url segments whose header is a JSON object naming `alg: ES256`.
    static func checkShape(_ text: String) throws(Problem) {
        guard let segments = segments(text) else { throw .notCompact }
        guard let header = object(Base64URL.decode(segments[0])) else { throw .unreadableHeader }
        let alg = header["alg"] as? String
        guard alg == "ES256" else { throw .unsupportedAlgorithm(alg) }
    }

    /// The payload of `text` as a JSON object, unverified; nil when it is not one.
    static func payload(_ text: String) -> [String: Any]? {
        guard let segments = segments(text) else { return nil }
        return object(Base64URL.decode(segments[1]))
    }

    private static func object(_ bytes: [UInt8]?) -> [String: Any]? {
        guard let bytes else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }
}
