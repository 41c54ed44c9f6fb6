/// A strict JSON parser over bytes into `JSONValue`, for messages of a fixed shape read in bulk (the ledger reads
/// every result and event): about a tenth of Foundation's `JSONDecoder` work for a result, because it builds one tree
/// and never throws while trying types. RFC 8259 exactly, plus the ledger's fail-closed choices: a duplicate member
/// name is an error (a message with two `user_id`s has no meaning money can rest on), nesting deeper than
/// `maximumDepth` is an error. Numbers read as `JSONValue.reading` does: an integer that fits 64 bits is `.integer`,
/// anything else a `.number` (whole doubles that fit become `.integer`). Checked against Foundation's
/// `JSONSerialization` as the oracle (`JSONParserTests`, the `fuzz-lean-json` target).
public struct JSONParser {
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public let description: String
        /// Byte offset where the input stopped being JSON.
        public let offset: Int
    }

    public static let maximumDepth = 64

    /// - Throws: `Failure` when `bytes` is not one JSON value (whitespace around it allowed).
    public static func parse(_ bytes: [UInt8]) throws(Failure) -> JSONValue {
        try parseNotingNumbers(bytes).value
    }

    /// `parse(_:)`, and whether every number in `bytes` was an integer written plainly (an optional minus and
    /// digits: no fraction, no exponent) that fits Int64. Those read as the same integer in any JSON reader; other
    /// numbers do not (Foundation's `JSONSerialization` reads `0.99999999999999999999` as an NSDecimalNumber whose
    /// `doubleValue` is 1 and `int64Value` 0, where this parser reads the double 1), so a reader that must decide
    /// exactly as Foundation does can tell when this parse is not enough (`Submission.leanMembers`).
    /// - Throws: `Failure` when `bytes` is not one JSON value (whitespace around it allowed).
    public static func parseNotingNumbers(_ bytes: [UInt8]) throws(Failure) -> (
        value: JSONValue, onlyPlainIntegers: Bool
    ) {
        try bytes.withUnsafeBufferPointer { buffer throws(Failure) -> (value: JSONValue, onlyPlainIntegers: Bool) in
            var parser = JSONParser(buffer)
            parser.skipWhitespace()
            let value = try parser.value(depth: 0)
            parser.skipWhitespace()
            guard parser.index == buffer.count else { throw parser.failure("trailing characters") }
            return (value, parser.onlyPlainIntegers)
        }
    }

    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    /// No number so far had a fraction or an exponent or was outside Int64.
    private var onlyPlainIntegers = true

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    func failure(_ what: String) -> Failure { Failure(description: what, offset: index) }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Enters the object or array at `index` (its opening bracket): whether it is empty (`close` follows; read).
    @inline(__always)
    mutating func entersEmpty(depth: Int, closedBy close: UInt8) throws(Failure) -> Bool {
        guard depth <= Self.maximumDepth else { throw failure("nested too deeply") }
        index += 1
        skipWhitespace()
        guard index < bytes.count, bytes[index] == close else { return false }
        index += 1
        return true
    }

    /// Reads the `:` after a member's name and the whitespace around it.
    @inline(__always)
    mutating func nameSeparator() throws(Failure) {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
        index += 1
        skipWhitespace()
    }

    /// After a member or an element: reads the `,` that continues its container (false) or the `close` that ends it
    /// (true).
    @inline(__always)
    mutating func closes(_ close: UInt8) throws(Failure) -> Bool {
        skipWhitespace()
        guard index < bytes.count else { throw failure("unexpected end") }
        switch bytes[index] {
        case UInt8(ascii: ","):
            index += 1
            return false
        case close:
            index += 1
            return true
        default: throw failure(close == UInt8(ascii: "}") ? "expected ',' or '}'" : "expected ',' or ']'")
        }
    }

    mutating func value(depth: Int) throws(Failure) -> JSONValue {
        guard index < bytes.count else { throw failure("unexpected end") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("unexpected character")
        }
    }

    mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw failure("unexpected end") }
        // `true`, `null` and the first four bytes of `false` as one word (a result holds dozens of nulls).
        if let base = bytes.baseAddress, count >= 4,
            UnsafeRawPointer(base + index).loadUnaligned(as: UInt32.self)
                == UnsafeRawPointer(word.utf8Start).loadUnaligned(as: UInt32.self),
            count == 4 || bytes[index + 4] == word.utf8Start[4]
        {
            index += count
            return
        }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw failure("unexpected character")
        }
        index += count
    }

    private mutating func object(depth: Int) throws(Failure) -> JSONValue {
        var members: [String: JSONValue] = [:]
        guard try !entersEmpty(depth: depth, closedBy: UInt8(ascii: "}")) else { return .object(members) }
        members.reserveCapacity(16)
        repeat {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a member name") }
            let name = try string()
            try nameSeparator()
            let member = try value(depth: depth)
            guard members.updateValue(member, forKey: name) == nil else { throw failure("duplicate member '\(name)'") }
        } while try !closes(UInt8(ascii: "}"))
        return .object(members)
    }

    private mutating func array(depth: Int) throws(Failure) -> JSONValue {
        var elements: [JSONValue] = []
        guard try !entersEmpty(depth: depth, closedBy: UInt8(ascii: "]")) else { return .array(elements) }
        repeat {
            skipWhitespace()
            elements.append(try value(depth: depth))
        } while try !closes(UInt8(ascii: "]"))
        return .array(elements)
    }

    /// `bytes` as a String. ASCII takes `String(decoding:)`'s concrete fast path: `String(validating:)` is
    /// generic, and its unspecialized validation looked up two generic types' metadata per string (about 650 of
    /// its ~975 instructions; 40 strings per result: 15 % of the ledger's instructions, `bench/ledger-callgrind.sh`).
    /// Anything else is validated strictly (never repaired).
    func text(_ bytes: UnsafeBufferPointer<UInt8>, isASCII: Bool) throws(Failure) -> String {
        if isASCII { return String(decoding: bytes, as: UTF8.self) }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw failure("invalid UTF-8") }
        return text
    }

    private mutating func string() throws(Failure) -> String {
        let start = index + 1
        var decoded: [UInt8] = []
        switch try scanString(decodingInto: &decoded) {
        case .plain(let end, let isASCII): return try text(UnsafeBufferPointer(rebasing: bytes[start..<end]), isASCII: isASCII)
        case .escaped(let isASCII):
            return try decoded.withUnsafeBufferPointer { buffer throws(Failure) in try text(buffer, isASCII: isASCII) }
        }
    }

    /// A string as `scanString` found it.
    enum ScannedString {
        /// No escapes: the text is the input's bytes from after the opening quote up to `end` (the closing quote).
        case plain(end: Int, isASCII: Bool)
        /// With escapes: the text was appended, decoded, to the caller's buffer.
        case escaped(isASCII: Bool)
    }

    /// Reads the string at `index` (its opening quote) and moves past its closing quote, checking that it holds no
    /// control character and only valid escapes (a lone surrogate is an error). Its UTF-8 is the caller's to check
    /// (`text` does, when it makes the `String`): `isASCII` says when there is nothing to check.
    mutating func scanString(decodingInto decoded: inout [UInt8]) throws(Failure) -> ScannedString {
        index += 1
        let start = index
        // Every byte's bits together: below 0x80 means ASCII, valid UTF-8 as it is.
        var bitsSeen: UInt8 = 0
        // The common case: no escapes, so the bytes between the quotes are the string (validated as UTF-8). This
        // scan runs over every byte of a receipt (2 KiB per POST at the ingest, where it was 12 instructions a byte):
        // eight bytes at a time while none of them is a quote, a backslash or a control character (SWAR: a byte of
        // `x - 0x01...01 * n` borrows into its high bit, where `x` has none, exactly when some byte of `x` is below
        // `n`; a byte equal to `c` is a zero byte of `x ^ c...c`), then byte by byte up to the stop.
        var end = start
        let count = bytes.count
        if let base = bytes.baseAddress {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highBits: UInt64 = 0x8080_8080_8080_8080
            var wordBits: UInt64 = 0
            while end + 8 <= count {
                // Byte 0 of the word is the first in memory, whatever the machine's byte order.
                let word = UInt64(littleEndian: UnsafeRawPointer(base + end).loadUnaligned(as: UInt64.self))
                let quote = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
                let backslash = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
                let stops =
                    ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
                if stops & highBits != 0 {
                    // The lowest flagged byte is a stop (a borrow runs only upwards, from a byte that is one):
                    // step to it, with the bytes before it seen.
                    let stop = (stops & highBits).trailingZeroBitCount >> 3
                    wordBits |= stop == 0 ? 0 : word & (UInt64.max >> (64 - 8 * UInt64(stop)))
                    end += stop
                    break
                }
                wordBits |= word
                end += 8
            }
            if wordBits & highBits != 0 { bitsSeen = 0x80 }
        }
        while end < count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            bitsSeen |= byte
            end += 1
        }
        index = end
        if index < count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return .plain(end: end, isASCII: bitsSeen < 0x80)
            }
            guard byte >= 0x20 else { throw failure("a control character in a string") }
        }
        decoded.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return .escaped(isASCII: bitsSeen < 0x80)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw failure("unexpected end") }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escaped)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0C)
                case UInt8(ascii: "n"): decoded.append(0x0A)
                case UInt8(ascii: "r"): decoded.append(0x0D)
                case UInt8(ascii: "t"): decoded.append(0x09)
                case UInt8(ascii: "u"):
                    try unicodeEscape(into: &decoded)
                    bitsSeen |= decoded.last ?? 0
                default: throw failure("unknown escape")
                }
            default:
                guard byte >= 0x20 else { throw failure("a control character in a string") }
                bitsSeen |= byte
                decoded.append(byte)
                index += 1
            }
        }
        throw failure("unterminated string")
    }

    /// `\u` and four hex digits (the `\u` read), with a surrogate pair as two escapes; a lone surrogate is an error.
    private mutating func unicodeEscape(into decoded: inout [UInt8]) throws(Failure) {
        var scalar = try hex4()
        if (0xD800...0xDBFF).contains(scalar) {
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw failure("a lone surrogate") }
            index += 2
            let low = try hex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw failure("a lone surrogate") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw failure("a lone surrogate")
        }
        guard let unicode = Unicode.Scalar(scalar) else { throw failure("not a Unicode scalar") }
        decoded.append(contentsOf: Array(String(Character(unicode)).utf8))
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("unexpected end") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw failure("not a hex digit")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    mutating func number() throws(Failure) -> JSONValue {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { throw failure("unexpected end") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(bytes[index]) {
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        } else {
            throw failure("expected a digit")
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            try digits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            try digits()
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if isInteger, let integer = Int64(text) { return .integer(integer) }
        onlyPlainIntegers = false
        guard let double = Double(text), double.isFinite else { throw failure("a number out of range") }
        return JSONValue.reading(double)
    }

    private mutating func digits() throws(Failure) {
        let start = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        guard index > start else { throw failure("expected a digit") }
    }
}

extension JSONValue {
    /// The same value as `other`, numbers compared within a double's precision: how `JSONParser` is checked against
    /// Foundation (a number with a fraction beyond 2^53 has no exact reading: Foundation truncates its fraction
    /// where the parser rounds to the nearest double; integers that fit 64 bits must be equal exactly).
    public func agrees(with other: JSONValue) -> Bool {
        func close(_ x: Double, _ y: Double) -> Bool { x == y || abs(x - y) <= abs(x) * 1e-15 }
        switch (self, other) {
        case (.integer(let x), .integer(let y)): return x == y || (abs(Double(x)) > 0x1p53 && close(Double(x), Double(y)))
        case (.integer(let x), .number(let y)), (.number(let y), .integer(let x)): return close(Double(x), y)
        case (.number(let x), .number(let y)): return close(x, y)
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { $0.agrees(with: $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { value.agrees(with: $0) } ?? false }
        default: return self == other
        }
    }
}
