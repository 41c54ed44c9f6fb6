/// Why a `receipt_data` value cannot be sent to Apple.
public enum ReceiptDataProblem: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    /// A StoreKit 2 signed transaction (JWS, `eyJ...`) sent where an app receipt belongs.
    case storeKit2Transaction
    case notBase64
    case tooLarge(bytes: Int, limit: Int)

    public var description: String {
        switch self {
        case .empty:
            "receipt_data is empty"
        case .storeKit2Transaction:
            "receipt_data is a StoreKit 2 signed transaction (JWS), not an app receipt: send the base64 app receipt "
                + "(Bundle.main.appStoreReceiptURL) instead"
        case .notBase64:
            "receipt_data is not base64 (standard alphabet A-Z a-z 0-9 + / with = padding)"
        case .tooLarge(let bytes, let limit):
            "receipt_data is \(bytes) bytes, over the limit of \(limit)"
        }
    }
}

/// Normalization and validation of base64 app receipts.
public enum ReceiptData {
    /// `raw` with whitespace and line breaks removed, checked to be standard base64 that is not a StoreKit 2 JWS.
    ///
    /// Apple answers 21002 to base64 with line breaks, so the normalized form is what goes on the wire. Runs on
    /// every submission (ingest and verifier): a receipt without whitespace is checked in place and returned as is.
    public static func normalize(_ raw: String) throws(ReceiptDataProblem) -> String {
        var raw = raw
        let checkedInPlace = raw.withUTF8 { buffer -> Result<Bool, ReceiptDataProblem> in
            guard !buffer.contains(where: isWhitespace) else { return .success(false) }
            do throws(ReceiptDataProblem) {
                try check(buffer)
                return .success(true)
            } catch {
                return .failure(error)
            }
        }
        if try checkedInPlace.get() { return raw }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(raw.utf8.count)
        for byte in raw.utf8 where !isWhitespace(byte) {
            bytes.append(byte)
        }
        try bytes.withUnsafeBufferPointer { buffer throws(ReceiptDataProblem) in try check(buffer) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Not empty, not a JWS, standard base64 (`bytes` without whitespace).
    private static func check(_ bytes: UnsafeBufferPointer<UInt8>) throws(ReceiptDataProblem) {
        guard !bytes.isEmpty else { throw .empty }
        if looksLikeJWS(bytes) { throw .storeKit2Transaction }
        guard isStandardBase64(bytes) else { throw .notBase64 }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    /// A compact JWS is three base64url segments joined by dots; a JSON header always starts `eyJ` (`{"`).
    private static func looksLikeJWS(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.starts(with: "eyJ".utf8) && bytes.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }

    static func isStandardBase64(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { isStandardBase64($0) }
    }

    static func isStandardBase64(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = bytes.count
        guard count % 4 == 0 else { return false }
        // Up to two '=' at the very end; everything before them from the standard alphabet.
        var end = count
        if end > 0, bytes[end - 1] == UInt8(ascii: "=") { end -= 1 }
        if end > 0, bytes[end - 1] == UInt8(ascii: "=") { end -= 1 }
        for index in 0..<end {
            switch bytes[index] {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                continue
            default:
                return false
            }
        }
        return true
    }
}
