import Foundation
import ServiceSupport
import Testing

/// `JSONText.quoted` works on UTF-8 bytes: its text must be what escaping each Unicode scalar gives, and valid JSON
/// that reads back as the same string.
struct JSONTextTests {
    @Test(arguments: [
        ("", #""""#),
        ("plain-id_42", #""plain-id_42""#),
        ("say \"hi\"", #""say \"hi\"""#),
        ("back\\slash", #""back\\slash""#),
        ("line\nfeed\rreturn\ttab", #""line\nfeed\rreturn\ttab""#),
        ("\u{00}\u{1f}\u{7f}", #""\u0000\u001f\#u{7f}""#),
        ("a\u{01}b", #""a\u0001b""#),
        ("héllo ✓ 🎉", "\"héllo ✓ 🎉\""),
        ("🎉\"\n", #""🎉\"\n""#),
    ])
    func quotes(_ value: String, _ expected: String) throws {
        let quoted = JSONText.quoted(value)
        #expect(quoted == expected)
        let decoded = try JSONSerialization.jsonObject(with: Data(quoted.utf8), options: [.fragmentsAllowed])
        #expect(decoded as? String == value)
    }
}
