/// Why a tool's command line was not parsed into options.
public enum CommandLineError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `--help` or `-h` where a flag was expected: print the usage text, exit 0.
    case helpRequested
    /// Bad usage, with what is wrong (a missing or invalid value, an unknown argument): exit 2.
    case usage(String)

    /// An argument the tool does not know.
    public static func unknownArgument(_ argument: String) -> CommandLineError {
        .usage("unknown argument '\(argument)'")
    }

    public var description: String {
        switch self {
        case .helpRequested: "help requested"
        case .usage(let problem): problem
        }
    }
}
