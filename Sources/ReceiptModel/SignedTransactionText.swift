import Foundation

/// Why a `signed_transaction` value cannot be a StoreKit 2 signed transaction.
public enum SignedTransactionProblem: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    case tooLarge(bytes: Int, limit: Int)
    /// Not three non-empty base64url segments joined by dots.
    case notCompactJWS
    /// The first segment is not a base64url JSON object.
    case unreadableHeader
    /// The header names another algorithm than ES256 (Apple signs with ES256 only).
    case unsupportedAlgorithm(String?)

    public var description: String {
        switch self {
        case .empty:
            "signed_transaction is empty"
        case .tooLarge(let bytes, let limit):
            "signed_transaction is \(bytes) bytes, over the limit of \(limit)"
        case .notCompactJWS:
            "signed_transaction is not a compact JWS (three base64url segments joined by dots): send "
                + "Transaction.jwsRepresentation unchanged"
        case .unreadableHeader:
            "signed_transaction's header is not a base64url JSON object"
        case .unsupportedAlgorithm(let alg):
            "signed_transaction's header names alg \(alg.map { "'\($0)'" } ?? "(none)"); Apple signs with ES256 only"
        }
    }
}

/// Shape checks of StoreKit 2 signed data done without verifying anything: what the ingest can refuse with a 400
/// before Kafka sees it. The verifier checks the certificate chain and the signature.
public enum SignedTransactionText {
    /// Apple's signed transactions are a few kilobytes (three certificates and a payload); anything much larger is not
    /// one, and is refused before it is decoded.
    public static let maximumBytes = 64 << 10

    /// `raw` with surrounding whitespace removed, checked to be a compact JWS whose header names `ES256`.
    public static func normalize(_ raw: String) throws(SignedTransactionProblem) -> String {
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw .empty }
        let bytes = Array(trimmed.utf8)
        guard bytes.count <= maximumBytes else { throw .tooLarge(bytes: bytes.count, limit: maximumBytes) }
        let segments = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3, segments.allSatisfy({ !$0.isEmpty && $0.allSatisfy(isBase64URL) }) else {
            throw .notCompactJWS
        }
        guard let header = Base64URL.decode(segments[0]),
            let object = try? JSONSerialization.jsonObject(with: Data(header)) as? [String: Any]
        else { throw .unreadableHeader }
        let alg = object["alg"] as? String
        guard alg == "ES256" else { throw .unsupportedAlgorithm(alg) }
        return trimmed
    }

    /// Whether `text` looks like a compact JWS at all (what the ingest uses to take a JWS sent as `receipt_data`
    /// as a signed transaction): starts with a JSON header (`eyJ`) and has exactly two dots.
    public static func looksLikeJWS(_ text: some StringProtocol) -> Bool {
        let utf8 = text.utf8
        return utf8.starts(with: "eyJ".utf8) && utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }

    static func isBase64URL(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }
}

/// base64url without padding (RFC 4648 §5), as JWS uses it.
public enum Base64URL {
    /// The decoded bytes, or nil when `text` is not base64url (padding `=` is tolerated at the end).
    public static func decode<S: Collection>(_ text: S) -> [UInt8]? where S.Element == UInt8 {
        var standard: [UInt8] = []
        standard.reserveCapacity(text.count + 3)
        for byte in text {
            switch byte {
            case UInt8(ascii: "-"): standard.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): standard.append(UInt8(ascii: "/"))
            case UInt8(ascii: "="): continue
            default: standard.append(byte)
            }
        }
        if standard.count % 4 == 1 { return nil }
        while standard.count % 4 != 0 { standard.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(standard)).map { Array($0) }
    }

    public static func encode(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        return String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }
}
