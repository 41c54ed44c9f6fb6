import Testing

@testable import ReceiptModel

@Suite struct ReceiptDataTests {
    @Test func lineBreaksAndSpacesAreRemoved() throws {
        #expect(try ReceiptData.normalize("TUlJ\r\nVGFn\n Zz09\t") == "TUlJVGFnZz09")
    }

    @Test func paddedBase64IsAccepted() throws {
        #expect(try ReceiptData.normalize("YQ==") == "YQ==")
        #expect(try ReceiptData.normalize("YWI=") == "YWI=")
        #expect(try ReceiptData.normalize("a+b/") == "a+b/")
    }

    @Test(arguments: ["YQ=", "Y===", "YQ==YQ==", "a-b_", "abc", "ab$d", "=abc", "A=B=", "AB=A", "YQ==\n=="])
    func invalidBase64IsRefused(_ text: String) {
        #expect(throws: ReceiptDataProblem.notBase64) { try ReceiptData.normalize(text) }
    }

    @Test func emptyIsRefused() {
        #expect(throws: ReceiptDataProblem.empty) { try ReceiptData.normalize(" \n") }
    }

    @Test func storeKit2TransactionIsRecognized() {
        let jws = "eyJhbGciOiJFUzI1NiIsIng1YyI6WyJ.eyJ0cmFuc2FjdGlvbklkIjoiMjAwMDAwMDAw.c2lnbmF0dXJl"
        #expect(throws: ReceiptDataProblem.storeKit2Transaction) { try ReceiptData.normalize(jws) }
        #expect(ReceiptDataProblem.storeKit2Transaction.description.contains("app receipt"))
    }

    /// The checks as they were before the table-driven scan (a whitespace scan, then range tests per byte): the
    /// table must decide every input the same way.
    static func reference(_ raw: String) -> Result<String, ReceiptDataProblem> {
        func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }
        let bytes = raw.utf8.filter { !isWhitespace($0) }
        guard !bytes.isEmpty else { return .failure(.empty) }
        if bytes.starts(with: "eyJ".utf8), bytes.filter({ $0 == UInt8(ascii: ".") }).count == 2 {
            return .failure(.storeKit2Transaction)
        }
        guard bytes.count % 4 == 0 else { return .failure(.notBase64) }
        var end = bytes.count
        if end > 0, bytes[end - 1] == UInt8(ascii: "=") { end -= 1 }
        if end > 0, bytes[end - 1] == UInt8(ascii: "=") { end -= 1 }
        for byte in bytes[..<end] {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                continue
            default:
                return .failure(.notBase64)
            }
        }
        return .success(String(decoding: bytes, as: UTF8.self))
    }

    @Test func theTableDecidesEveryInputAsTheRangeTestsDid() {
        // Every string of up to 4 characters over the interesting ones, then longer random ones (a fixed seed).
        let alphabet: [String] = ["A", "z", "9", "+", "/", "=", " ", "\n", ".", "-", "é", "e", "y", "J", "\u{0}"]
        var inputs: [String] = [""]
        var layer: [String] = [""]
        for _ in 0..<4 {
            layer = layer.flatMap { prefix in alphabet.map { prefix + $0 } }
            inputs += layer
        }
        inputs += ["eyJ.a.b", "eyJ..", "eyJ...", " eyJ\n.a.b", "eyJ.a.b==", "eyJhbGci.YQ.YQ", "YQ==\n==", "YQ==  "]
        var state: UInt64 = 26
        for _ in 0..<20_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let length = Int(state >> 58) + 4
            var text = (Int(state >> 40) % 3 == 0) ? "eyJ" : ""
            for index in 0..<length {
                let pick = Int((state >> UInt64(index % 50)) % UInt64(alphabet.count * 4))
                text += pick < alphabet.count ? alphabet[pick] : String(alphabet[pick % 5])
            }
            inputs.append(text)
        }
        for input in inputs {
            let actual = Result { () throws(ReceiptDataProblem) in try ReceiptData.normalize(input) }
            #expect(actual == Self.reference(input), "\(Array(input.utf8))")
            #expect(
                ReceiptData.isStandardBase64(Array(input.utf8))
                    == (input.isEmpty || (try? Self.reference(input).get()) == input),
                "\(Array(input.utf8))")
        }
    }
}
