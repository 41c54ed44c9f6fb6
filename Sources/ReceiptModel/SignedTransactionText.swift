import Foundation

/// Why a `signed_transaction` (or `signed_app_transaction`) value cannot be StoreKit 2 signed data.
public enum SignedTransactionProblem: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    case tooLarge(bytes: Int, limit: Int)
    /// Not three non-empty base64url segments joined by dots.
    case notCompactJWS
    /// The first segment is not a base64url JSON object.
    case unreadableHeader
    /// The header names another algorithm than ES256 (Apple signs with ES256 only).
    case unsupportedAlgorithm(String?)

    public var description: String { message(for: .signedTransaction) }

    /// The problem, naming the field the JWS was sent in and what the app should send there.
    public func message(for field: SignedDataField) -> String {
        let name = field.rawValue
        switch self {
        case .empty:
            return "\(name) is empty"
        case .tooLarge(let bytes, let limit):
            return "\(name) is \(bytes) bytes, over the limit of \(limit)"
        case .notCompactJWS:
            return "\(name) is not a compact JWS (three base64url segments joined by dots): send "
                + "\(field.deviceSource) unchanged"
        case .unreadableHeader:
            return "\(name)'s header is not a base64url JSON object"
        case .unsupportedAlgorithm(let alg):
            return "\(name)'s header names alg \(alg.map { "'\($0)'" } ?? "(none)"); Apple signs with ES256 only"
        }
    }
}

/// The submission fields that carry StoreKit 2 signed data (both checked by `SignedTransactionText.normalize`).
public enum SignedDataField: String, Sendable, CaseIterable {
    case signedTransaction = "signed_transaction"
    case signedAppTransaction = "signed_app_transaction"

    /// What the app sends in it, as StoreKit names it.
    public var deviceSource: String {
        switch self {
        case .signedTransaction: "Transaction.jwsRepresentation"
        case .signedAppTransaction: "AppTransaction.shared's jwsRepresentation"
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
    ///
    /// Runs for every signed transaction the ingest accepts and the verifier decodes, so the common case (nothing
    /// to trim) neither copies the text nor converts it through UTF-16: Foundation's trimming of a 4 KB string cost
    /// more than the rest of a verification.
    public static func normalize(_ raw: String) throws(SignedTransactionProblem) -> String {
        var trimmed = trimmingWhitespace(raw)
        guard !trimmed.isEmpty else { throw .empty }
        let count = trimmed.utf8.count
        guard count <= maximumBytes else { throw .tooLarge(bytes: count, limit: maximumBytes) }
        // One pass over the bytes in place: the two dots, every other byte base64url, no empty segment.
        let headerEnd = trimmed.withUTF8 { bytes -> Int? in
            var dots: [Int] = []
            for index in 0..<bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: ".") {
                    dots.append(index)
                    if dots.count > 2 { return nil }
                } else if !Base64URL.isAlphabet(byte) {
                    return nil
                }
            }
            guard dots.count == 2, dots[0] > 0, dots[1] > dots[0] + 1, dots[1] < bytes.count - 1 else { return nil }
            return dots[0]
        }
        guard let headerEnd else { throw .notCompactJWS }
        guard let header = Base64URL.decode(trimmed.utf8.prefix(headerEnd)),
            let probe = try? JSONDecoder().decode(AlgorithmProbe.self, from: Data(header))
        else { throw .unreadableHeader }
        guard probe.alg == "ES256" else { throw .unsupportedAlgorithm(probe.alg) }
        return trimmed
    }

    /// `raw` without surrounding whitespace (as `trimmingCharacters(in: .whitespacesAndNewlines)`), without work
    /// when there is none to remove.
    static func trimmingWhitespace(_ raw: String) -> String {
        let utf8 = raw.utf8
        guard let first = utf8.first, let last = utf8.last else { return raw }
        // Printable ASCII at both ends: nothing to trim (every Unicode space is either an ASCII control or space,
        // or starts with a byte >= 0x80).
        if first > 0x20, first < 0x7f, last > 0x20, last < 0x7f { return raw }
        return raw.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The header's `alg` (nil when absent or not a string); decoding fails only when the header is not an object.
    private struct AlgorithmProbe: Decodable {
        let alg: String?

        enum CodingKeys: String, CodingKey { case alg }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            alg = try? container.decodeIfPresent(String.self, forKey: .alg)
        }
    }

    /// Whether `text` looks like a compact JWS at all (what the ingest uses to take a JWS sent as `receipt_data`
    /// as a signed transaction): starts with a JSON header (`eyJ`) and has exactly two dots.
    public static func looksLikeJWS(_ text: some StringProtocol) -> Bool {
        let utf8 = text.utf8
        return utf8.starts(with: "eyJ".utf8) && utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }
}

/// base64url without padding (RFC 4648 §5), as JWS uses it.
public enum Base64URL {
    /// The decoded bytes, or nil when `text` is not base64url (padding `=` is tolerated at the end).
    ///
    /// Inlinable so each caller gets it specialized for its collection: called unspecialized across modules it went
    /// through a witness table for every byte, half the ingest's CPU on a 13 KB notification (`perf`).
    @inlinable
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

    /// Whether `byte` is one of base64url's 64 characters (`A`-`Z`, `a`-`z`, `0`-`9`, `-`, `_`; no padding).
    static func isAlphabet(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }

    public static func encode(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        return String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }
}
