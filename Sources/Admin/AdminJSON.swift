import Foundation
import ServiceSupport

/// The JSON `receipt-admin` prints (`--json`) and writes in audit lines.
extension JSONValue {
    /// A string, or null.
    static func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
    /// An integer, or null.
    static func int(_ value: Int64?) -> JSONValue { value.map(JSONValue.integer) ?? .null }
    static func int(_ value: Int?) -> JSONValue { value.map { JSONValue.integer(Int64($0)) } ?? .null }

    /// One line of JSON, keys sorted.
    public var line: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }
}

/// Times for people: `2026-01-31T12:00:00Z`.
enum AdminTime {
    static func text(_ epochMs: Int64?) -> String {
        guard let epochMs else { return "-" }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: Double(epochMs) / 1000))
    }
}
