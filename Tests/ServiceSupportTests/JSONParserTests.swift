import Foundation
import ServiceSupport
import Testing

/// The lean parser against Foundation's JSON decoding as the oracle: the same value for every document both read,
/// and the same verdict (JSON or not) for mutated documents. Inputs come from a fixed seed, so a run is repeatable.
@Suite struct JSONParserTests {
    /// A fixed-seed generator (SplitMix64): the same inputs on every run.
    struct Seeded {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    }

    static let strings = [
        "", "gems", "a\"b", "back\\slash", "tab\there", "é", "日本", "😀", "\u{7F}", "line\nbreak", "/",
    ]
    static let numbers = [
        "0", "-0", "1", "-17", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "1.5", "-0.25",
        "1e2", "1E-2", "2.5e+3", "10.0", "12345678901234567890", "1234567890123456789.75", "0.1",
    ]

    static func text(_ string: String, _ random: inout Seeded) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += random.below(2) == 0 ? "\\t" : "\\u0009"
            case "/": out += random.below(2) == 0 ? "/" : "\\/"
            default:
                if scalar.value > 0xFFFF, random.below(2) == 0 {
                    let v = scalar.value - 0x10000
                    out += String(format: "\\u%04X\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF))
                } else if scalar.value > 0x7F, random.below(3) == 0, scalar.value <= 0xFFFF {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    static func space(_ random: inout Seeded) -> String { ["", " ", "\n", "\t ", "\r\n"][random.below(5)] }

    static func document(_ random: inout Seeded, depth: Int = 0) -> String {
        let kind = depth > 3 ? random.below(4) : random.below(6)
        switch kind {
        case 0: return text(strings[random.below(strings.count)], &random)
        case 1: return numbers[random.below(numbers.count)]
        case 2: return ["true", "false", "null"][random.below(3)]
        case 3: return text("k\(random.below(100))", &random)
        case 4:
            let count = random.below(4)
            let elements = (0..<count).map { _ in space(&random) + document(&random, depth: depth + 1) + space(&random) }
            return "[" + elements.joined(separator: ",") + "]"
        default:
            let count = random.below(5)
            let members = (0..<count).map { index in
                space(&random) + text("m\(index)", &random) + space(&random) + ":" + space(&random)
                    + document(&random, depth: depth + 1)
            }
            return "{" + members.joined(separator: ",") + space(&random) + "}"
        }
    }

    static func oracle(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    @Test func readsWhatFoundationReadsAsFoundationDoes() throws {
        var random = Seeded(state: 20_261_202)
        for _ in 0..<3_000 {
            let bytes = Array(Self.document(&random).utf8)
            let expected = try #require(Self.oracle(bytes), "\(String(decoding: bytes, as: UTF8.self))")
            #expect(try JSONParser.parse(bytes) == expected, "\(String(decoding: bytes, as: UTF8.self))")
        }
    }

    @Test func refusesWhatFoundationRefuses() {
        var random = Seeded(state: 7)
        let alphabet = Array("{}[]\":,\\ 0-1.eEtrufalsn\u{0}".utf8) + [0xFF, 0xC3]
        var compared = 0
        for _ in 0..<4_000 {
            var bytes = Array(Self.document(&random).utf8)
            guard !bytes.isEmpty else { continue }
            for _ in 0...random.below(2) {
                let position = random.below(bytes.count)
                switch random.below(3) {
                case 0: bytes[position] = alphabet[random.below(alphabet.count)]
                case 1: bytes.remove(at: position)
                default: bytes.insert(alphabet[random.below(alphabet.count)], at: position)
                }
                if bytes.isEmpty { break }
            }
            let theirs = Self.oracle(bytes)
            switch Result(catching: { () throws(JSONParser.Failure) in try JSONParser.parse(bytes) }) {
            case .success(let ours):
                if let theirs {
                    #expect(ours.agrees(with: theirs), "\(bytes)")
                } else {
                    Issue.record("Foundation refuses what the parser read: \(bytes)")
                }
            case .failure(let failure):
                if theirs != nil {
                    #expect(Self.isKnownLeniency(bytes, failure), "Foundation reads what the parser refused: \(bytes)")
                }
            }
            compared += 1
        }
        #expect(compared > 3_500)
    }

    /// Where Foundation reads more than RFC 8259 (and the parser, by design, does not): a trailing comma, a NUL
    /// outside strings, a duplicate member name (Foundation keeps the last one).
    static func isKnownLeniency(_ bytes: [UInt8], _ failure: JSONParser.Failure) -> Bool {
        if failure.description.hasPrefix("duplicate member") { return true }
        if bytes.contains(0) { return true }
        guard failure.offset < bytes.count, bytes[failure.offset] == UInt8(ascii: "}") || bytes[failure.offset] == UInt8(ascii: "]")
        else { return false }
        let before = bytes[..<failure.offset].last { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        return before == UInt8(ascii: ",")
    }

    @Test func edgeCases() throws {
        #expect(try JSONParser.parse(Array(#"{"a":1,"b":[true,null,"x"]}"#.utf8))
            == .object(["a": .integer(1), "b": .array([.bool(true), .null, .string("x")])]))
        #expect(try JSONParser.parse(Array(#""\ud83d\ude00""#.utf8)) == .string("😀"))
        #expect(try JSONParser.parse(Array("1234567890123456789.75".utf8)) == .integer(1_234_567_890_123_456_768))
        for invalid in [
            #"{"a":1,"a":2}"#, #""\ud800""#, "[1,]", "{\"a\":1,}", "01", "1.", "-", "\"a\u{1}\"", "nul", "[1] 2", "",
            String(repeating: "[", count: 70) + String(repeating: "]", count: 70),
        ] {
            #expect(throws: JSONParser.Failure.self, "\(invalid)") { try JSONParser.parse(Array(invalid.utf8)) }
        }
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse([0x22, 0xFF, 0x22]) }
    }

    @Test func parseNotingNumbersSaysWhetherEveryNumberWasAPlainInt64Integer() throws {
        for plain in ["{}", "[]", #""1.5""#, "0", "-0", "17", "-9223372036854775808", "9223372036854775807",
                      #"{"a":[1,{"b":-2}],"c":"1e3"}"#, "true", "null"] {
            let parsed = try JSONParser.parseNotingNumbers(Array(plain.utf8))
            #expect(parsed.onlyPlainIntegers, "\(plain)")
            #expect(parsed.value == (try JSONParser.parse(Array(plain.utf8))))
        }
        for other in ["1.0", "1e3", "1E0", "-0.0", "0.5", "9223372036854775808", "-9223372036854775809", "1e-400",
                      #"{"a":[1,{"b":2.0}]}"#, #"[1,2,3.25]"#] {
            let parsed = try JSONParser.parseNotingNumbers(Array(other.utf8))
            #expect(!parsed.onlyPlainIntegers, "\(other)")
            #expect(parsed.value == (try JSONParser.parse(Array(other.utf8))))
        }
    }

    /// The string scan reads eight bytes at a time up to the first quote, backslash or control character: wherever
    /// such a byte (or a non-ASCII one) falls in a word, the string reads as Foundation reads it, and a control
    /// character is refused at its own offset.
    @Test func stringsReadTheSameWhereverTheirSpecialBytesFall() throws {
        for length in 0..<34 {
            for position in 0...length {
                let before = String(repeating: "a", count: position)
                let after = String(repeating: "b", count: length - position)
                for special in ["", #"\n"#, #"\""#, #"\\"#, #"\u00e9"#, "é", "😀", "\u{7F}", "~", "]"] {
                    let document = "[\"" + before + special + after + "\"]"
                    let bytes = Array(document.utf8)
                    let expected = try #require(Self.oracle(bytes), "\(document)")
                    #expect(try JSONParser.parse(bytes) == expected, "\(document)")
                }
                let control = Array("[\"\(before)\u{1}\(after)\"]".utf8)
                do {
                    _ = try JSONParser.parse(control)
                    Issue.record("a control character was read: \(control)")
                } catch {
                    #expect(error.description == "a control character in a string")
                    #expect(error.offset == 2 + position)
                }
                // Invalid UTF-8 is refused wherever it falls (the scan must notice non-ASCII in skipped words).
                for invalid: [UInt8] in [[0xFF], [0xC3], [0xED, 0xA0, 0x80]] {
                    let bytes = Array("[\"\(before)".utf8) + invalid + Array("\(after)\"]".utf8)
                    #expect(throws: JSONParser.Failure.self, "\(bytes)") { try JSONParser.parse(bytes) }
                }
                let unterminated = Array("[\"\(before)\(after)".utf8)
                #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(unterminated) }
            }
        }
    }

    /// An object of up to six members, each a generated document (so names repeat in nested objects, are sometimes
    /// written with escapes, and values nest).
    static func object(_ random: inout Seeded) -> [UInt8] {
        let members = (0..<random.below(7)).map { index in
            space(&random) + text("m\(index)", &random) + ":" + space(&random) + document(&random, depth: 1)
        }
        return Array(("{" + members.joined(separator: ",") + "}").utf8)
    }

    /// `members` against `parse`: the same verdict for every input, valid or mutated (it checks what it skips by
    /// the same rules), and the same values for the members read (a kind-only read: an empty array or object).
    @Test func membersAcceptExactlyWhatParseAcceptsAndReadTheSameValues() throws {
        var random = Seeded(state: 43)
        let alphabet = Array("{}[]\":,\\ 0-1.eEtrufalsnm\u{0}".utf8) + [0xFF, 0xC3]
        let reads: [JSONParser.MemberRead] = [.value("m0"), .kind("m1"), .value("m2"), .kind("m3"), .value("m9")]
        var accepted = 0
        var refused = 0
        for round in 0..<6_000 {
            var bytes = Self.object(&random)
            if round % 2 == 1 {
                for _ in 0...random.below(2) where !bytes.isEmpty {
                    let position = random.below(bytes.count)
                    switch random.below(3) {
                    case 0: bytes[position] = alphabet[random.below(alphabet.count)]
                    case 1: bytes.remove(at: position)
                    default: bytes.insert(alphabet[random.below(alphabet.count)], at: position)
                    }
                }
            }
            let parsed = try? JSONParser.parse(bytes)
            let read = try? JSONParser.members(bytes, reads)
            guard case .object(let whole)? = parsed else {
                #expect(read == nil, "members read what parse refuses or is no object: \(bytes)")
                refused += 1
                continue
            }
            let values = try #require(read, "members refused what parse read: \(bytes)")
            accepted += 1
            for (read, value) in zip(["m0", "m1", "m2", "m3", "m9"], values) {
                switch (whole[read], read == "m1" || read == "m3") {
                case (.array?, true): #expect(value == .array([]), "\(bytes)")
                case (.object?, true): #expect(value == .object([:]), "\(bytes)")
                case (let expected, _): #expect(value == expected, "\(read) of \(bytes)")
                }
            }
        }
        #expect(accepted > 2_000 && refused > 1_000)
    }

    @Test func membersEdgeCases() throws {
        let reads: [JSONParser.MemberRead] = [.value("a"), .kind("b")]
        #expect(try JSONParser.members(Array(#"{"b":[1,{"x":2}],"c":{"d":[]},"a":"yes"}"#.utf8), reads)
            == [.string("yes"), .array([])])
        // A name written with escapes is the same name: read, and a duplicate of its plain spelling.
        #expect(try JSONParser.members(Array(#"{"\u0061":1}"#.utf8), reads) == [.integer(1), nil])
        for invalid in [
            #"{"a":1,"\u0061":2}"#, #"{"x":{"k":1,"k":2}}"#, #"{"x":[{"k":1},{"k":2,"\u006b":3}]}"#,
            #"{"x":1e999}"#, #"{"x":123456789012345678901234567890e400}"#, #"{"x":01}"#, #"{"x":"\ud800"}"#,
            "{\"x\":\"\u{1}\"}", #"{"x":[1,]}"#, "[1]", "\"a\"", #"{"a":1} 2"#, "",
            "{\"x\":" + String(repeating: "[", count: 70) + String(repeating: "]", count: 70) + "}",
        ] {
            #expect(throws: JSONParser.Failure.self, "\(invalid)") { try JSONParser.members(Array(invalid.utf8), reads) }
        }
        #expect(throws: JSONParser.Failure.self) { try JSONParser.members([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D], reads) }
        // The same name in sibling objects is no duplicate.
        #expect(try JSONParser.members(Array(#"{"x":[{"k":1},{"k":2}],"y":{"k":3}}"#.utf8), reads) == [nil, nil])
    }
}
