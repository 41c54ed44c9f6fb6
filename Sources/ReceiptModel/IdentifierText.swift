/// Identifiers a submission carries (`submission_id`, `order_id`, `user_id`, `client_id`, the `expected_*` fields
/// and their iOS aliases) end up in Kafka keys and headers, logs, indexes and a crediting service's database. A
/// control character in one is never meaningful and can be harmful: PostgreSQL's libpq ends a text parameter at a
/// NUL, so `victim\u0000x` would be stored, looked up and credited as `victim` (issue 24, item 9). Such an id is
/// refused, never truncated or cleaned: 400 at the ingest, `malformed_submission` at the verifier for messages
/// produced directly to Kafka, so no result of the pipeline ever carries one.
public enum IdentifierText {
    /// The first control character in `text`, if any: C0 (U+0000-U+001F, NUL included), DEL (U+007F) or C1
    /// (U+0080-U+009F), Unicode's general category Cc. Other characters (letters of any script, spaces, emoji)
    /// are fine.
    public static func firstControlCharacter(in text: String) -> Unicode.Scalar? {
        text.unicodeScalars.first(where: isControl)
    }

    /// Whether `scalar` is C0, DEL or C1.
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// The problem to report for `field` holding `text`, or nil when it has no control character. Names the
    /// character by code point (`U+0000`), never quoting the value.
    public static func problem(field: String, _ text: String) -> String? {
        guard let scalar = firstControlCharacter(in: text) else { return nil }
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "\(field) contains the control character U+\(String(repeating: "0", count: max(0, 4 - hex.count)))\(hex) "
            + "(identifiers may not hold C0, DEL or C1 control characters; nothing is truncated)"
    }
}
