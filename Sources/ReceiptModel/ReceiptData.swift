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
    /// every submission (ingest and verifier): a receipt without whitespace is checked in place, in one pass over
    /// its bytes, and returned as is.
    public static func normalize(_ raw: String) throws(ReceiptDataProblem) -> String {
        var raw = raw
        let checkedInPlace = raw.withUTF8 { buffer -> Result<Bool, ReceiptDataProblem> in
            let scanned = scan(buffer)
            // Whitespace is never padding, so the scan before the padding saw every whitespace byte there is.
            guard scanned.classes & whitespace == 0 else { return .success(false) }
            do throws(ReceiptDataProblem) {
                try check(buffer, scanned)
                return .success(true)
            } catch {
                return .failure(error)
            }
        }
        if try checkedInPlace.get() { return raw }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(raw.utf8.count)
        byteClasses.withUnsafeBufferPointer { classes in
            for byte in raw.utf8 where classes[Int(byte)] & whitespace == 0 {
                bytes.append(byte)
            }
        }
        try bytes.withUnsafeBufferPointer { buffer throws(ReceiptDataProblem) in try check(buffer, scan(buffer)) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Not empty, not a JWS, standard base64 (`bytes` without whitespace, `scan` its scan).
    private static func check(
        _ bytes: UnsafeBufferPointer<UInt8>, _ scan: (end: Int, classes: UInt8)
    ) throws(ReceiptDataProblem) {
        guard !bytes.isEmpty else { throw .empty }
        // Standard base64 has no '.', so it is never a JWS: the JWS test is only needed to name a refusal.
        if scan.classes == 0, bytes.count % 4 == 0 { return }
        if looksLikeJWS(bytes) { throw .storeKit2Transaction }
        throw .notBase64
    }

    /// A byte's class in `byteClasses`: the standard alphabet (A-Z a-z 0-9 + /) is 0.
    private static let whitespace: UInt8 = 1
    /// Anything else: '=' (padding, allowed only at the end: `scan` stops before it), '.', '-', '_', non-ASCII...
    private static let notInAlphabet: UInt8 = 2

    /// The class of every byte value (one lookup per byte instead of a range test per alphabet part).
    private static let byteClasses: [UInt8] = (0...255).map { value -> UInt8 in
        switch UInt8(value) {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
            0
        case 0x20, 0x0A, 0x0D, 0x09: whitespace
        default: notInAlphabet
        }
    }

    /// Where `bytes`' padding starts (up to two '=' at the very end) and the classes of every byte before it,
    /// together: 0 when they are all of the standard alphabet.
    private static func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> (end: Int, classes: UInt8) {
        var end = bytes.count
        if end > 0, bytes[end - 1] == UInt8(ascii: "=") { end -= 1 }
        if end > 0, bytes[end - 1] == UInt8(ascii: "=") { end -= 1 }
        var seen: UInt8 = 0
        byteClasses.withUnsafeBufferPointer { classes in
            for index in 0..<end { seen |= classes[Int(bytes[index])] }
        }
        return (end, seen)
    }

    /// A compact JWS is three base64url segments joined by dots; a JSON header always starts `eyJ` (`{"`).
    private static func looksLikeJWS(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.starts(with: "eyJ".utf8) && bytes.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }

    static func isStandardBase64(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { isStandardBase64($0) }
    }

    /// A multiple of 4 bytes of the standard alphabet, up to two '=' at the very end.
    static func isStandardBase64(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.count % 4 == 0 && scan(bytes).classes == 0
    }
}
