/// JSON objects written member by member for table tests that vary one member's raw JSON value (the oracle tables of
/// the lean readers).
public enum JSONObjectText {
    /// `{"name":value,...}` with each value's raw JSON text as given.
    public static func body(_ members: [(String, String)]) -> [UInt8] {
        Array(("{" + members.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}").utf8)
    }

    /// `base` with `field` set to `value` (replaced where present, appended where not).
    public static func setting(_ base: [(String, String)], _ field: String, _ value: String) -> [UInt8] {
        var members = base
        if let index = members.firstIndex(where: { $0.0 == field }) {
            members[index].1 = value
        } else {
            members.append((field, value))
        }
        return body(members)
    }
}
