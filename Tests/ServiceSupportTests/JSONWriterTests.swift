import ServiceSupport
import Testing

/// `JSONWriter`'s numbers are written digit by digit: they must spell every Int64 as `String(value)` does.
@Suite struct JSONWriterTests {
    @Test(arguments: [
        Int64.min, Int64.min + 1, -1_000_000_007, -10, -9, -1, 0, 1, 9, 10, 99, 100, 1_700_000_000_000,
        Int64.max - 1, Int64.max,
    ])
    func numbersAreSpelledAsStringDoes(_ value: Int64) {
        var writer = JSONWriter(capacity: 32)
        writer.member("n", first: true)
        writer.number(value)
        writer.raw("}")
        #expect(String(decoding: writer.bytes, as: UTF8.self) == "{\"n\":\(String(value))}")
    }

    @Test func aMissingNumberIsNull() {
        var writer = JSONWriter(capacity: 8)
        writer.number(nil)
        #expect(String(decoding: writer.bytes, as: UTF8.self) == "null")
    }
}
