/// Reading a few members of a large object without building the rest: every ingest replica reads every result on
/// the topic for its verdict index, and needs five top-level members of a message whose transactions are most of its
/// bytes (issue 43). The same strictness as `parse`: the whole input is checked to be one JSON value by the same
/// rules (RFC 8259, UTF-8, no duplicate member name in any object, numbers in range, `maximumDepth`), so `members`
/// accepts exactly what `parse` accepts; only the named members' values are built. `JSONParserTests` and the
/// `fuzz-lean-json` target hold it to `parse`.
extension JSONParser {
    /// A member `members` reads: its whole value, or only what kind of value it is (an array or object comes back
    /// empty, its content checked and skipped; a scalar comes back whole).
    public struct MemberRead: Sendable {
        let name: StaticString
        let kindOnly: Bool

        public static func value(_ name: StaticString) -> MemberRead { MemberRead(name: name, kindOnly: false) }
        public static func kind(_ name: StaticString) -> MemberRead { MemberRead(name: name, kindOnly: true) }
    }

    /// The members `reads` of the top-level object `bytes`, in the order of `reads` (nil: absent).
    /// - Throws: `Failure` when `bytes` is not one JSON value, or is a value other than an object.
    public static func members(_ bytes: [UInt8], _ reads: [MemberRead]) throws(Failure) -> [JSONValue?] {
        try bytes.withUnsafeBufferPointer { buffer throws(Failure) -> [JSONValue?] in
            var parser = JSONParser(buffer)
            parser.skipWhitespace()
            guard parser.index < buffer.count, buffer[parser.index] == UInt8(ascii: "{") else {
                throw parser.failure("expected an object")
            }
            var found = [JSONValue?](repeating: nil, count: reads.count)
            var keys = MemberNames()
            let readHashes = reads.map { MemberName.hash(UnsafeBufferPointer(start: $0.name.utf8Start, count: $0.name.utf8CodeUnitCount)) }
            try parser.scanObject(depth: 1, keys: &keys) { parser, keys, name throws(Failure) in
                let position = readHashes.indices.first {
                    readHashes[$0] == name.hash && name.equals(reads[$0].name, in: parser.bytes, keys)
                }
                guard let position else {
                    try parser.skipValue(depth: 1, keys: &keys)
                    return
                }
                guard reads[position].kindOnly, parser.index < parser.bytes.count else {
                    found[position] = try parser.value(depth: 1)
                    return
                }
                switch parser.bytes[parser.index] {
                case UInt8(ascii: "["):
                    try parser.skipValue(depth: 1, keys: &keys)
                    found[position] = .array([])
                case UInt8(ascii: "{"):
                    try parser.skipValue(depth: 1, keys: &keys)
                    found[position] = .object([:])
                default:
                    found[position] = try parser.value(depth: 1)
                }
            }
            parser.skipWhitespace()
            guard parser.index == buffer.count else { throw parser.failure("trailing characters") }
            return found
        }
    }

    /// Checks the value at `index` and moves past it, building nothing (a number with a fraction, an exponent or
    /// more digits than an Int64 is read, to be refused as `parse` refuses it when out of range).
    mutating func skipValue(depth: Int, keys: inout MemberNames) throws(Failure) {
        guard index < bytes.count else { throw failure("unexpected end") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            try scanObject(depth: depth + 1, keys: &keys) { parser, keys, _ throws(Failure) in
                try parser.skipValue(depth: depth + 1, keys: &keys)
            }
        case UInt8(ascii: "["): try skipArray(depth: depth + 1, keys: &keys)
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try skipNumber()
        default: throw failure("unexpected character")
        }
    }

    /// The object at `index` (its `{` not yet read): each member's name is checked against the object's earlier
    /// names, then `member` reads or skips its value.
    private mutating func scanObject(
        depth: Int, keys: inout MemberNames,
        member: (inout JSONParser, inout MemberNames, MemberName) throws(Failure) -> Void
    ) throws(Failure) {
        guard try !entersEmpty(depth: depth, closedBy: UInt8(ascii: "}")) else { return }
        let first = keys.names.count
        defer { keys.removeNames(from: first) }
        // The object's names so far, as 256 bits of their hashes: most names are new, and are told so without a
        // look at the others.
        var seen = NameFilter()
        repeat {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a member name") }
            let name = try memberName(keys: &keys)
            if !seen.insert(name.hash), keys.contains(name, after: first, in: bytes) {
                throw failure("duplicate member '\(name.text(in: bytes, keys))'")
            }
            keys.append(name)
            try nameSeparator()
            try member(&self, &keys, name)
        } while try !closes(UInt8(ascii: "}"))
    }

    private mutating func skipArray(depth: Int, keys: inout MemberNames) throws(Failure) {
        guard try !entersEmpty(depth: depth, closedBy: UInt8(ascii: "]")) else { return }
        repeat {
            skipWhitespace()
            try skipValue(depth: depth, keys: &keys)
        } while try !closes(UInt8(ascii: "]"))
    }

    /// A member name at `index`: its bytes in the input when it has no escape, else decoded into `keys`' storage.
    private mutating func memberName(keys: inout MemberNames) throws(Failure) -> MemberName {
        let start = index + 1
        let decodedStart = keys.decoded.count
        switch try scanString(decodingInto: &keys.decoded) {
        case .plain(let end, let isASCII):
            let name = UnsafeBufferPointer(rebasing: bytes[start..<end])
            if !isASCII { _ = try text(name, isASCII: false) }
            return MemberName(start: start, end: end, isDecoded: false, hash: MemberName.hash(name))
        case .escaped(let isASCII):
            let hash = try keys.decoded.withUnsafeBufferPointer { buffer throws(Failure) in
                let name = UnsafeBufferPointer(rebasing: buffer[decodedStart...])
                if !isASCII { _ = try text(name, isASCII: false) }
                return MemberName.hash(name)
            }
            keys.decodedNames += 1
            return MemberName(start: decodedStart, end: keys.decoded.count, isDecoded: true, hash: hash)
        }
    }

    /// Checks the string at `index` as `string()` does (its UTF-8 too) and moves past it.
    private mutating func skipString() throws(Failure) {
        let start = index + 1
        var decoded: [UInt8] = []
        switch try scanString(decodingInto: &decoded) {
        case .plain(let end, let isASCII):
            if !isASCII { _ = try text(UnsafeBufferPointer(rebasing: bytes[start..<end]), isASCII: false) }
        case .escaped(let isASCII):
            if !isASCII {
                _ = try decoded.withUnsafeBufferPointer { buffer throws(Failure) in try text(buffer, isASCII: false) }
            }
        }
    }

    private mutating func skipNumber() throws(Failure) {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        let digitsStart = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        let plain =
            index > digitsStart && index - digitsStart <= 18
            && (bytes[digitsStart] != UInt8(ascii: "0") || index - digitsStart == 1)
            && (index == bytes.count
                || (bytes[index] != UInt8(ascii: ".") && bytes[index] != UInt8(ascii: "e")
                    && bytes[index] != UInt8(ascii: "E")))
        guard !plain else { return }
        // Anything else (a fraction, an exponent, a long or malformed number) is read as `parse` reads it.
        index = start
        _ = try number()
    }
}

/// A member name, by position: in the input (`isDecoded` false) or in `MemberNames.decoded` (its escapes decoded),
/// with a hash of its bytes so that names are compared byte by byte only when their hashes agree.
struct MemberName {
    let start: Int
    let end: Int
    let isDecoded: Bool
    let hash: UInt64

    /// A multiply-and-rotate hash over the name's bytes, eight at a time (names are short; not for untrusted
    /// keys of a hash table: it only decides when two names are compared byte by byte).
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hash = 0x9E37_79B9_7F4A_7C15 ^ UInt64(bytes.count)
        guard let base = bytes.baseAddress else { return hash }
        var offset = 0
        while offset + 8 <= bytes.count {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + offset).loadUnaligned(as: UInt64.self))
            hash = MemberName.rotated((hash ^ word) &* 0xBF58_476D_1CE4_E5B9, by: 31)
            offset += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count {
            tail |= UInt64(bytes[offset]) << shift
            shift += 8
            offset += 1
        }
        hash = MemberName.rotated((hash ^ tail) &* 0x94D0_49BB_1331_11EB, by: 29)
        return hash ^ (hash >> 32)
    }

    private static func rotated(_ value: UInt64, by bits: UInt64) -> UInt64 { value << bits | value >> (64 - bits) }

    func bytes<R>(in input: UnsafeBufferPointer<UInt8>, _ keys: MemberNames, _ body: (UnsafeBufferPointer<UInt8>) -> R)
        -> R
    {
        if isDecoded {
            return keys.decoded.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[start..<end])) }
        }
        return body(UnsafeBufferPointer(rebasing: input[start..<end]))
    }

    func equals(_ name: StaticString, in input: UnsafeBufferPointer<UInt8>, _ keys: MemberNames) -> Bool {
        guard end - start == name.utf8CodeUnitCount else { return false }
        return bytes(in: input, keys) { own in
            Self.same(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), own)
        }
    }

    /// The same bytes (a plain loop: `elementsEqual` on buffers costs hundreds of instructions per call).
    static func same(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var index = 0
        while index < a.count {
            if a[index] != b[index] { return false }
            index += 1
        }
        return true
    }

    func text(in input: UnsafeBufferPointer<UInt8>, _ keys: MemberNames) -> String {
        bytes(in: input, keys) { String(decoding: $0, as: UTF8.self) }
    }
}

/// The names of the objects being read (a stack: an object's names are dropped when it ends), for the duplicate
/// check without a `String` per name.
struct MemberNames {
    var names: [MemberName] = []
    /// `names`' hashes, in a buffer of their own for the duplicate check's scan.
    var hashes: [UInt64] = []
    /// The decoded bytes of names written with escapes (rare), and how many of `names` are such.
    var decoded: [UInt8] = []
    var decodedNames = 0

    init() {
        names.reserveCapacity(64)
        hashes.reserveCapacity(64)
    }

    mutating func append(_ name: MemberName) {
        names.append(name)
        hashes.append(name.hash)
    }

    func contains(_ name: MemberName, after first: Int, in input: UnsafeBufferPointer<UInt8>) -> Bool {
        hashes.withUnsafeBufferPointer { hashes in
            var index = first
            while index < hashes.count {
                if hashes[index] == name.hash {
                    let other = names[index]
                    if name.bytes(in: input, self, { mine in other.bytes(in: input, self) { MemberName.same(mine, $0) } }) {
                        return true
                    }
                }
                index += 1
            }
            return false
        }
    }

    mutating func removeNames(from first: Int) {
        if decodedNames > 0 {
            decodedNames -= names[first...].count { $0.isDecoded }
            if decodedNames == 0 { decoded.removeAll(keepingCapacity: true) }
        }
        names.removeSubrange(first...)
        hashes.removeSubrange(first...)
    }
}

/// A set of 256 bits over names' hashes: `insert` says whether the name's bit was clear (then the name is new).
struct NameFilter {
    private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    /// - Returns: true when no name with this bit was inserted before (the name is certainly new).
    mutating func insert(_ hash: UInt64) -> Bool {
        let bit = UInt64(1) << (hash >> 56 & 63)
        let wasClear: Bool
        switch hash >> 62 {
        case 0: wasClear = words.0 & bit == 0; words.0 |= bit
        case 1: wasClear = words.1 & bit == 0; words.1 |= bit
        case 2: wasClear = words.2 & bit == 0; words.2 |= bit
        default: wasClear = words.3 & bit == 0; words.3 |= bit
        }
        return wasClear
    }
}
