import Foundation
import Testing

@testable import ServiceSupport

/// A catalog's opaque `credit` reaches crediting unchanged: whatever JSON numbers it holds read, write and read back
/// to the same value, in the same case.
@Suite struct JSONValueTests {
    @Test(arguments: [
        "1", "-7", "0", "1.0", "0.75", "-1e-7", "2.5e300", "1234567890123456789.75", "12345678901234567890",
        "9223372036854775807", "-9223372036854775808", "9223372036854775808", "1e18", "123456789012345678901234567890",
    ])
    func aNumberSurvivesARoundTrip(_ text: String) throws {
        let read = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        let again = try JSONDecoder().decode(JSONValue.self, from: try JSONEncoder().encode(read))
        #expect(again == read, "\(text): \(read) became \(again)")
    }

    @Test func aWholeNumberThatFitsIsAnInteger() throws {
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data("1.0".utf8)) == .integer(1))
        #expect(
            try JSONDecoder().decode(JSONValue.self, from: Data("1234567890123456789.75".utf8))
                == .integer(1_234_567_890_123_456_768))
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data("0.75".utf8)) == .number(0.75))
    }
}
