/// UTF-8 JSON text appended piece by piece, for messages whose shape is fixed and whose bytes must equal
/// `JSONEncoder`'s with `.sortedKeys` and `.withoutEscapingSlashes` (`MessageCoding`): the caller writes the members
/// in sorted order. Strings are escaped as `JSONText.quoted` does. Used where `JSONEncoder`'s generic machinery was
/// most of the cost (results and events in the verifier, submissions in the ingest; issue 26); each user's tests
/// compare its bytes with `MessageCoding`'s.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func raw(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// `{"key":` for the first member of an object, `,"key":` for the others (keys need no escaping).
    public mutating func member(_ key: StaticString, first: Bool = false) {
        bytes.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func null() {
        raw("null")
    }

    public mutating func string(_ value: String?) {
        guard var value else { return null() }
        // Most values need no escaping: checked eight bytes at a time and copied straight from the string's own
        // UTF-8 buffer (made native first when bridged), not through its UTF-8 view's iterator twice.
        let copied = value.withUTF8 { utf8 -> Bool in
            guard !JSONText.needsEscaping(utf8) else { return false }
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: utf8)
            bytes.append(UInt8(ascii: "\""))
            return true
        }
        if !copied { raw(JSONText.quoted(value)) }
    }

    /// Decimal digits written straight into the bytes (as `String(value)` spells them), without a String between.
    public mutating func number(_ value: Int64?) {
        guard let value else { return null() }
        var magnitude = value.magnitude
        // 20 digits hold UInt64.max; the sign goes in front.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 { bytes.append(UInt8(ascii: "-")) }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    public mutating func bool(_ value: Bool?) {
        guard let value else { return null() }
        raw(value ? "true" : "false")
    }
}
