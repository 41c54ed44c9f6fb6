import Foundation

/// A tool's name and usage text, and the one way every tool ends on `--help` and bad usage: `--help` prints the
/// usage on stdout and exits 0; bad usage prints `<name>: <problem>`, a blank line and the usage on stderr and
/// exits 2.
public struct CommandLineTool: Sendable {
    /// What parsing decided.
    public enum Outcome<Options> {
        /// Run with these options.
        case run(Options)
        /// Exit now with this status (0 after `--help`, 2 on bad usage); the text was written.
        case exit(Int32)
    }

    /// As the user typed it, for messages: `receipt-replay`, `fake-appstore send-notification`.
    public let name: String
    public let usage: String
    private let standardOutput: @Sendable (String) -> Void
    private let standardError: @Sendable (String) -> Void

    /// - Parameters:
    ///   - standardOutput, standardError: where the texts go (tests capture them); by default the process's streams.
    public init(
        name: String, usage: String,
        standardOutput: @escaping @Sendable (String) -> Void = { print($0, terminator: "") },
        standardError: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }
    ) {
        self.name = name
        self.usage = usage
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    /// Runs `parser` over `arguments` and writes the help or the problem when it does not produce options.
    public func parse<Options>(
        _ arguments: [String], with parser: (inout CommandLineArguments) throws(CommandLineError) -> Options
    ) -> Outcome<Options> {
        var reader = CommandLineArguments(arguments)
        do throws(CommandLineError) {
            return .run(try parser(&reader))
        } catch .helpRequested {
            standardOutput(usage + "\n")
            return .exit(0)
        } catch {
            standardError("\(name): \(error.description)\n\n\(usage)\n")
            return .exit(2)
        }
    }

    /// What a tool runs with once its command line is read: the options, the process environment, the settings read
    /// from it and a logger labelled with the tool's name.
    public typealias Start<Options> = (
        options: Options, environment: [String: String], settings: Settings, logger: Logger
    )

    /// Parses the process's arguments with `parser` (`--help` and bad usage end the tool as `parse` says), then
    /// reads the environment every tool reads.
    public func start<Options>(
        with parser: (inout CommandLineArguments) throws(CommandLineError) -> Options,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Outcome<Start<Options>> {
        switch parse(Array(CommandLine.arguments.dropFirst()), with: parser) {
        case .exit(let status): return .exit(status)
        case .run(let options):
            return .run((
                options, environment, Settings(environment: environment),
                Logger.fromEnvironment(label: name, environment: environment)
            ))
        }
    }
}
