import Crypto
import Testing

struct HexTests {
    @Test(arguments: [
        ([] as [UInt8], "", ""),
        ([0x00], "", "00"),
        ([0x0f, 0xa0, 0xff, 0x09], "", "0fa0ff09"),
        ([0xde, 0xad, 0xbe, 0xef], ":", "de:ad:be:ef"),
        ([0x01, 0x23], ", ", "01, 23"),
    ])
    func encodes(_ bytes: [UInt8], _ separator: String, _ expected: String) {
        #expect(Hex.encode(bytes, separator: separator) == expected)
        // Any sequence, not only arrays.
        #expect(Hex.encode(bytes.lazy.map { $0 }, separator: separator) == expected)
    }

    @Test func everyByteAsStringRadix16Writes() {
        let bytes = (0...255).map { UInt8($0) }
        let expected = bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        #expect(Hex.encode(bytes) == expected)
    }
}
