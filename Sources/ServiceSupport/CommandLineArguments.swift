import Foundation

/// A tool's arguments (without the program name), read front to back by its options parser.
///
/// ```swift
/// var options = Options()
/// while let flag = try arguments.nextFlag() {
///     switch flag {
///     case "--dry-run": options.dryRun = true
///     case "--to": options.destination = try arguments.value(for: flag)
///     default: throw .unknownArgument(flag)
///     }
/// }
/// ```
public struct CommandLineArguments: Sendable {
    private var remaining: ArraySlice<String>

    public init(_ arguments: [String]) {
        remaining = arguments[...]
    }

    /// Whether every argument was read.
    public var isEmpty: Bool { remaining.isEmpty }

    /// The next argument, nil when none is left.
    /// - Throws: `CommandLineError.helpRequested` when it is `--help` or `-h`.
    public mutating func nextFlag() throws(CommandLineError) -> String? {
        guard let argument = remaining.popFirst() else { return nil }
        if argument == "--help" || argument == "-h" { throw .helpRequested }
        return argument
    }

    /// The argument after `flag`, whatever it looks like.
    /// - Throws: `CommandLineError.usage(problem)` when none is left; `problem` defaults to "<flag> needs a value".
    public mutating func value(for flag: String, problem: String? = nil) throws(CommandLineError) -> String {
        guard let value = remaining.popFirst() else { throw .usage(problem ?? "\(flag) needs a value") }
        return value
    }

    /// The argument after `flag` as a time: epoch milliseconds, or ISO 8601 (`2026-01-31T12:00:00Z`, fractional
    /// seconds allowed), as epoch milliseconds.
    /// - Throws: `CommandLineError.usage` naming the flag and the value when it is missing or neither.
    public mutating func epochMilliseconds(for flag: String) throws(CommandLineError) -> Int64 {
        let text = try value(for: flag)
        if let milliseconds = Int64(text) { return milliseconds }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
        throw .usage("\(flag) takes epoch milliseconds or an ISO 8601 time like 2026-01-31T12:00:00Z, not '\(text)'")
    }

    /// The argument after `flag` as a whole number in `range`.
    /// - Throws: `CommandLineError.usage(problem)` when it is missing, not a number or out of `range`; `problem`
    ///   defaults to "<flag> takes a whole number from <lower> to <upper>".
    public mutating func int(
        for flag: String, in range: ClosedRange<Int>, problem: String? = nil
    ) throws(CommandLineError) -> Int {
        let problem = problem ?? "\(flag) takes a whole number from \(range.lowerBound) to \(range.upperBound)"
        guard let text = remaining.popFirst(), let number = Int(text), range.contains(number) else {
            throw .usage(problem)
        }
        return number
    }
}
