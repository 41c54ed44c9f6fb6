import ServiceSupport

/// The members of one JSON object of a message, read by name with the types the contract gives them: the strict
/// readers' (`VerificationResultJSON.read`, `PurchaseEventJSON.read`, the ledger's). Absent and null read as nil; a
/// member of another type makes the message unreadable, naming where (`wrong type at transactions.0.quantity`), never
/// its contents.
struct JSONFields {
    let members: [String: JSONValue]
    /// Where this object is in the message (`transactions.0`), for the reasons.
    let path: String

    init(_ value: JSONValue, path: String) throws(UnreadableMessage) {
        guard case .object(let members) = value else {
            throw UnreadableMessage(path.isEmpty ? "not a JSON object" : "wrong type at \(path)")
        }
        self.members = members
        self.path = path
    }

    /// The message's top-level object, parsed by the strict `JSONParser` (a duplicate member, invalid UTF-8 or a
    /// number that does not fit is `malformed JSON`).
    static func message(_ bytes: [UInt8]) throws(UnreadableMessage) -> JSONFields {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw UnreadableMessage("malformed JSON")
        }
        return try JSONFields(value, path: "")
    }

    private func at(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }

    private func present(_ name: String) -> JSONValue? {
        switch members[name] {
        case nil, .null?: nil
        case let value?: value
        }
    }

    func string(_ name: String) throws(UnreadableMessage) -> String? {
        guard let value = present(name) else { return nil }
        guard case .string(let text) = value else { throw UnreadableMessage("wrong type at \(at(name))") }
        return text
    }

    func requiredString(_ name: String) throws(UnreadableMessage) -> String {
        guard let text = try string(name) else { throw UnreadableMessage("missing \(at(name))") }
        return text
    }

    func int64(_ name: String) throws(UnreadableMessage) -> Int64? {
        guard let value = present(name) else { return nil }
        guard case .integer(let number) = value else { throw UnreadableMessage("wrong type at \(at(name))") }
        return number
    }

    func requiredInt64(_ name: String) throws(UnreadableMessage) -> Int64 {
        guard let number = try int64(name) else { throw UnreadableMessage("missing \(at(name))") }
        return number
    }

    func bool(_ name: String) throws(UnreadableMessage) -> Bool? {
        guard let value = present(name) else { return nil }
        guard case .bool(let flag) = value else { throw UnreadableMessage("wrong type at \(at(name))") }
        return flag
    }

    /// Any JSON value (the catalog's opaque `credit`), nil when absent.
    func value(_ name: String) -> JSONValue? { members[name] }

    /// The objects of an array member, each with its path.
    func objects(_ name: String) throws(UnreadableMessage) -> [JSONFields] {
        guard let value = present(name) else { return [] }
        guard case .array(let elements) = value else { throw UnreadableMessage("wrong type at \(at(name))") }
        var objects: [JSONFields] = []
        objects.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            objects.append(try JSONFields(element, path: "\(at(name)).\(index)"))
        }
        return objects
    }

    func object(_ name: String) throws(UnreadableMessage) -> JSONFields? {
        guard let value = present(name) else { return nil }
        return try JSONFields(value, path: at(name))
    }
}

/// Why a message cannot be read: the dead-letter reason (it names members and paths, never values).
public struct UnreadableMessage: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension IdentifierText {
    /// Identifiers the messages carry end up in keys, logs and a crediting service's database: a control character
    /// (a NUL, which libpq would cut the text at, or any other C0/C1 control or DEL) makes the message unreadable
    /// instead of truncated or credited to another user. `member` names it in the reason.
    public static func check(_ value: String?, _ member: String) throws(UnreadableMessage) {
        guard let value, let problem = problem(field: member, value) else { return }
        throw UnreadableMessage(problem)
    }
}
