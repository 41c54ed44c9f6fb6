import ServiceSupport

/// A JSON object written field by field, omitting nil values (Apple omits absent fields in signed payloads).
struct FakeJSONObject: Sendable {
    private var members: [String] = []

    mutating func string(_ name: String, _ value: String?) { raw(name, value.map(JSONText.quoted)) }

    mutating func integer(_ name: String, _ value: Int64?) { raw(name, value.map(String.init)) }

    mutating func bool(_ name: String, _ value: Bool?) { raw(name, value.map(String.init)) }

    /// `value` must already be JSON.
    mutating func raw(_ name: String, _ value: String?) {
        guard let value else { return }
        members.append("\(JSONText.quoted(name)):\(value)")
    }

    var text: String { "{" + members.joined(separator: ",") + "}" }
    var bytes: [UInt8] { Array(text.utf8) }
}
