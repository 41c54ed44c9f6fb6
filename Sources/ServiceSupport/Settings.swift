import Foundation

/// A setting that is missing or cannot be parsed. The message names the variable and what it accepts.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable, Equatable {
    public let variable: String
    public let problem: String

    public init(variable: String, problem: String) {
        self.variable = variable
        self.problem = problem
    }

    public var description: String { "\(variable): \(problem)" }
}

/// Typed access to environment-variable settings. Every parse failure is a `ConfigurationError` naming the variable.
public struct Settings: Sendable {
    public let environment: [String: String]

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// The value, with surrounding whitespace removed; empty counts as unset.
    public func string(_ name: String) -> String? {
        guard let raw = environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !raw.isEmpty else {
            return nil
        }
        return raw
    }

    public func string(_ name: String, default defaultValue: String) -> String {
        string(name) ?? defaultValue
    }

    public func required(_ name: String) throws(ConfigurationError) -> String {
        guard let value = string(name) else { throw ConfigurationError(variable: name, problem: "is required") }
        return value
    }

    public func int(_ name: String, default defaultValue: Int, range: ClosedRange<Int> = Int.min...Int.max)
        throws(ConfigurationError) -> Int
    {
        guard let raw = string(name) else { return defaultValue }
        guard let value = Int(raw) else {
            throw ConfigurationError(variable: name, problem: "'\(raw)' is not a whole number")
        }
        guard range.contains(value) else {
            throw ConfigurationError(variable: name, problem: "\(value) is outside \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    public func double(_ name: String, default defaultValue: Double) throws(ConfigurationError) -> Double {
        guard let raw = string(name) else { return defaultValue }
        guard let value = Double(raw), value.isFinite else {
            throw ConfigurationError(variable: name, problem: "'\(raw)' is not a number")
        }
        return value
    }

    public func bool(_ name: String, default defaultValue: Bool) throws(ConfigurationError) -> Bool {
        guard let raw = string(name)?.lowercased() else { return defaultValue }
        switch raw {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw ConfigurationError(variable: name, problem: "'\(raw)' is not true or false")
        }
    }

    /// A comma-separated list; blanks are dropped.
    public func list(_ name: String) -> [String] {
        guard let raw = string(name) else { return [] }
        return raw.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// One of `choices` (compared case-insensitively).
    public func choice(_ name: String, from choices: [String], default defaultValue: String) throws(ConfigurationError) -> String {
        guard let raw = string(name) else { return defaultValue }
        guard let match = choices.first(where: { $0.caseInsensitiveCompare(raw) == .orderedSame }) else {
            throw ConfigurationError(variable: name, problem: "'\(raw)' is not one of \(choices.joined(separator: ", "))")
        }
        return match
    }

    /// A `host:port` listen address.
    public func listenAddress(_ name: String, default defaultValue: String) throws(ConfigurationError) -> ListenAddress {
        let raw = string(name, default: defaultValue)
        guard let address = ListenAddress(raw) else {
            throw ConfigurationError(variable: name, problem: "'\(raw)' is not host:port")
        }
        return address
    }
}

/// An IPv4 `host:port` to listen on (`0.0.0.0:8080`, `127.0.0.1:0` for an ephemeral port).
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    public let host: String
    public let port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        let host = String(text[..<colon])
        guard let port = UInt16(text[text.index(after: colon)...]) else { return nil }
        self.host = host.isEmpty ? "0.0.0.0" : host
        self.port = port
    }

    public var description: String { "\(host):\(port)" }
}
