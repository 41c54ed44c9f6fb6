/// Decoding that survives Apple's wire format: numbers and booleans sent as strings, ids sent as numbers,
/// booleans sent as 0/1 or "true"/"false". A value of an unusable shape reads as absent instead of failing the
/// whole response; callers decide which fields are required.
extension KeyedDecodingContainer {
    /// A string, or a number written as its decimal text.
    ///
    /// `lenientText`'s first `decodeIfPresent` answers nil without throwing exactly when the key is absent or null,
    /// and then every other attempt would answer nil too: no `contains` lookup before it (one dictionary lookup fewer
    /// for each of the twenty-odd fields of a transaction, bench/verifier-callgrind.sh).
    func lenientString(_ key: Key) -> String? {
        switch lenientText(key) {
        case .absent: return nil
        case .text(let text): return text
        case .notText: break  // present, not a string: a number's text is tried below
        }
        if let value = try? decodeIfPresent(Int64.self, forKey: key) { return String(value) }
        if let value = try? decodeIfPresent(UInt64.self, forKey: key) { return String(value) }
        if let value = try? decodeIfPresent(Double.self, forKey: key), value.isFinite,
            value == value.rounded(), abs(value) < 1e18
        {
            return String(Int64(value))
        }
        return nil
    }

    /// An integer, or its decimal text (`"1539946248000"`), or a whole floating-point number. Text is tried first:
    /// it is what Apple sends, and each failed attempt costs a thrown error.
    func lenientInt64(_ key: Key) -> Int64? {
        switch lenientText(key) {
        case .absent:
            return nil
        case .text(let text):
            return LenientText.int64(text)
        case .notText:
            break
        }
        if let value = try? decodeIfPresent(Int64.self, forKey: key) { return value }
        if let value = try? decodeIfPresent(Double.self, forKey: key), value.isFinite, value == value.rounded(),
            abs(value) < 9e18
        {
            return Int64(value)
        }
        return nil
    }

    /// The key's value read as text first, as Apple sends most values. `absent` (absent or null) means every other
    /// attempt would answer nil too (see `lenientString`); `notText` is a present value of another type.
    private func lenientText(_ key: Key) -> LenientText {
        do {
            guard let text = try decodeIfPresent(String.self, forKey: key) else { return .absent }
            return .text(text)
        } catch {
            return .notText
        }
    }

    /// The key is in the object with a value other than JSON null.
    func isPresent(_ key: Key) -> Bool {
        contains(key) && (try? decodeNil(forKey: key)) == false
    }

    /// `true`/`false`, `1`/`0`, or those as text (any case). Text is tried first, as Apple sends it.
    func lenientBool(_ key: Key) -> Bool? {
        switch lenientText(key) {
        case .absent:
            return nil
        case .text(let text):
            return LenientText.bool(text)
        case .notText:
            break
        }
        if let value = try? decodeIfPresent(Bool.self, forKey: key) { return value }
        if let value = try? decodeIfPresent(Int64.self, forKey: key) {
            return value == 0 ? false : value == 1 ? true : nil
        }
        return nil
    }
}

/// What `lenientText` found, and the rules for values Apple sent as text (both trees read text with them:
/// `VerifyReceiptFields`).
enum LenientText {
    case absent
    case text(String)
    case notText

    /// Decimal text (`"1539946248000"`), with whitespace around it or not, or the text of a whole number
    /// (`"1.5e3"`) below 9e18.
    static func int64(_ text: String) -> Int64? {
        if let value = Int64(text) { return value }
        let trimmed = text.trimmingWhitespace()
        if let value = Int64(trimmed) { return value }
        if let value = Double(trimmed), value.isFinite, value == value.rounded(), abs(value) < 9e18 {
            return Int64(value)
        }
        return nil
    }

    /// `true`/`false`, `1`/`0`, `yes`/`no` in any case, with whitespace around them or not.
    static func bool(_ text: String) -> Bool? {
        switch text.trimmingWhitespace().lowercased() {
        case "true", "1", "yes": true
        case "false", "0", "no": false
        default: nil
        }
    }
}

extension String {
    func trimmingWhitespace() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = lastIndex(where: { !isSpace($0) })!
        return self[first...last]
    }
}

/// A JSON key not known at compile time.
struct AnyCodingKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
