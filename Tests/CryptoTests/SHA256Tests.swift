import Foundation
import Crypto
import Testing

@Suite("SHA256")
struct SHA256Tests {
    @Test("hashes the FIPS 180-2 test vectors")
    func knownVectors() {
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        let million = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hex(million) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("gives the same digest for an array, a slice, a UTF-8 view and a lazy sequence of the same bytes")
    func inputShapes() {
        let text = "receipt-verification"
        let bytes = Array(text.utf8)
        let expected = SHA256.hash(bytes)
        #expect(expected.count == 32)
        #expect(SHA256.hash(text.utf8) == expected)
        #expect(SHA256.hash(([0] + bytes)[1...]) == expected)
        #expect(SHA256.hash(bytes.lazy.map { $0 }) == expected)
        #expect(SHA256.hash(Array("receipt-verificatioN".utf8)) != expected)
    }
}

@Suite("Hex")
struct HexTests {
    @Test("every byte value as two lowercase digits, the same through every input shape and with separators")
    func everyByte() {
        let bytes = (0...255).map { UInt8($0) }
        let expected = bytes.map { String(format: "%02x", $0) }
        #expect(Hex.encode(bytes) == expected.joined())
        #expect(Hex.encode(bytes[16...]) == expected[16...].joined())
        #expect(Hex.encode(bytes.lazy.map { $0 }) == expected.joined())
        #expect(Hex.encode(bytes, separator: ":") == expected.joined(separator: ":"))
        #expect(Hex.encode([UInt8]()) == "")
        #expect(Hex.encode([0xAB]) == "ab")
    }
}
