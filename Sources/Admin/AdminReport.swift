import ServiceSupport

/// What one subcommand found: an exit code, a readable summary and the same as JSON.
public struct AdminReport: Sendable, Equatable {
    public var command: String
    public var exitCode: AdminExitCode
    /// The summary, line by line.
    public var lines: [String]
    /// The command's members (`command`, `exit_code` and `outcome` are added when rendered).
    public var fields: [String: JSONValue]

    public init(command: String, exitCode: AdminExitCode, lines: [String], fields: [String: JSONValue]) {
        self.command = command
        self.exitCode = exitCode
        self.lines = lines
        self.fields = fields
    }

    /// A failure before or instead of the command's answer (`error` holds what happened and what to do).
    public static func failure(
        _ command: String, _ exitCode: AdminExitCode, message: String, httpStatus: Int? = nil, errorCode: Int? = nil,
        fields: [String: JSONValue] = [:]
    ) -> AdminReport {
        var members = fields
        members["error"] = .object([
            "message": .string(message), "http_status": .int(httpStatus), "error_code": .int(errorCode),
        ])
        var line = "\(command): \(message)"
        if let errorCode { line += " [errorCode \(errorCode)]" }
        return AdminReport(command: command, exitCode: exitCode, lines: [line], fields: members)
    }

    /// The JSON object printed with `--json`.
    public var json: JSONValue {
        var members = fields
        members["command"] = .string(command)
        members["exit_code"] = .integer(Int64(exitCode.rawValue))
        members["outcome"] = .string(exitCode.outcome)
        return .object(members)
    }

    /// What is printed on stdout: the summary, or one line of JSON.
    public func rendered(json asJSON: Bool) -> String {
        asJSON ? json.line + "\n" : lines.joined(separator: "\n") + "\n"
    }
}
