import ServiceSupport

/// A coding key for any field name: the payload types read fields one by one, tolerantly.
struct AnyCodingKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
    init(_ name: String) { stringValue = name }
}

/// Tolerant field readers for App Store payloads. Apple's fields drift between API versions and tools (ids as
/// strings or numbers, dates as integer or fractional milliseconds from Xcode, new enum values): a field that is
/// absent, null or of an unexpected type reads as nil instead of failing the whole payload. Where a wrong value
/// matters for money, `readable...` distinguishes "absent" from "present but unreadable".
extension KeyedDecodingContainer where Key == AnyCodingKey {
    /// A string; a JSON number is accepted and rendered as its integer (or decimal) text.
    func lenientString(_ name: String) -> String? {
        let key = AnyCodingKey(name)
        if let text = try? decodeIfPresent(String.self, forKey: key) { return text }
        if let number = try? decodeIfPresent(Int64.self, forKey: key) { return String(number) }
        if let number = try? decodeIfPresent(Double.self, forKey: key), number.isFinite {
            if number == number.rounded(), abs(number) < 9.0e15 { return String(Int64(number)) }
            return String(number)
        }
        return nil
    }

    /// One of Apple's open string enums (`OpenStringEnum`), read as `lenientString` reads it: an unknown value is
    /// kept as it is.
    func lenient<Value: OpenStringEnum>(_ name: String) -> Value? {
        lenientString(name).map(Value.init(rawValue:))
    }

    /// An integer; a fractional number is truncated toward zero, a decimal string is accepted.
    func lenientInt(_ name: String) -> Int64? {
        if case .value(let number) = readableInt(name) { return number }
        return nil
    }

    /// Epoch milliseconds (integer, fractional as Xcode writes them, or a decimal string), fraction dropped.
    func lenientMillis(_ name: String) -> Int64? {
        lenientInt(name)
    }

    /// A boolean; `"true"`/`"false"` and the numbers 0/1 are accepted.
    func lenientBool(_ name: String) -> Bool? {
        let key = AnyCodingKey(name)
        if let flag = try? decodeIfPresent(Bool.self, forKey: key) { return flag }
        if let text = try? decodeIfPresent(String.self, forKey: key) {
            if text == "true" { return true }
            if text == "false" { return false }
        }
        if let number = try? decodeIfPresent(Int64.self, forKey: key), number == 0 || number == 1 { return number == 1 }
        return nil
    }

    /// A JSON object, as it is; nil when absent, null or anything but an object.
    func lenientObject(_ name: String) -> JSONValue? {
        guard let value = try? decodeIfPresent(JSONValue.self, forKey: AnyCodingKey(name)),
            case .object = value
        else { return nil }
        return value
    }

    /// An array of strings, skipping elements that are not strings.
    func lenientStrings(_ name: String) -> [String]? {
        guard let values = try? decodeIfPresent([JSONValue].self, forKey: AnyCodingKey(name)) else { return nil }
        return values.compactMap { if case .string(let text) = $0 { text } else { nil } }
    }

    /// An integer (or epoch-ms date), distinguishing absent/null from present-but-unreadable.
    func readableInt(_ name: String) -> ReadableField<Int64> {
        let key = AnyCodingKey(name)
        guard contains(key), (try? decodeNil(forKey: key)) != true else { return .absent }
        if let number = try? decode(Int64.self, forKey: key) { return .value(number) }
        if let number = try? decode(Double.self, forKey: key), let whole = Self.wholeNumber(number) {
            return .value(whole)
        }
        if let text = try? decode(String.self, forKey: key) {
            if let number = Int64(text) { return .value(number) }
            if let number = Double(text), let whole = Self.wholeNumber(number) { return .value(whole) }
        }
        return .unreadable
    }

    /// A boolean (`true`/`false`, `"true"`/`"false"`, 0/1), distinguishing absent/null from present-but-unreadable.
    func readableBool(_ name: String) -> ReadableField<Bool> {
        let key = AnyCodingKey(name)
        guard contains(key), (try? decodeNil(forKey: key)) != true else { return .absent }
        if let flag = lenientBool(name) { return .value(flag) }
        return .unreadable
    }

    private static func wholeNumber(_ number: Double) -> Int64? {
        guard number.isFinite, abs(number) < 9.0e18 else { return nil }
        return Int64(number)
    }
}
