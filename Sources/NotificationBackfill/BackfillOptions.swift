import ServiceSupport

/// `receipt-notifications-backfill`'s command line.
public struct BackfillOptions: Sendable, Equatable {
    /// Notifications signed at or after this time (epoch ms).
    public var sinceMs: Int64
    /// ... and before this one (epoch ms; default now).
    public var untilMs: Int64
    /// Only the notifications Apple could not deliver.
    public var onlyFailures = false
    /// Read and print, write nothing.
    public var dryRun = false
    /// Which App Store: `production` (default) or `sandbox`.
    public var sandbox = false
    /// The app whose notifications to read (the token's `bid`); default the only `ALLOWED_BUNDLE_IDS` entry.
    public var bundleId: String?

    public init(sinceMs: Int64, untilMs: Int64) {
        self.sinceMs = sinceMs
        self.untilMs = untilMs
    }

    /// Apple keeps 180 days of production history and 30 of sandbox history.
    public var retentionDays: Int64 { sandbox ? 30 : 180 }

    /// Parses the arguments and checks the window against Apple's retention.
    /// - Throws: `CommandLineError.helpRequested` for `--help`, else `.usage` naming the flag that is missing or
    ///   invalid.
    public static func parse(
        _ arguments: inout CommandLineArguments, nowMs: Int64
    ) throws(CommandLineError) -> BackfillOptions {
        var since: Int64?
        var until: Int64?
        var options = BackfillOptions(sinceMs: 0, untilMs: nowMs)
        while let flag = try arguments.nextFlag() {
            switch flag {
            case "--since": since = try arguments.epochMilliseconds(for: flag)
            case "--until": until = try arguments.epochMilliseconds(for: flag)
            case "--only-failures": options.onlyFailures = true
            case "--dry-run": options.dryRun = true
            case "--environment":
                switch try arguments.value(for: flag).lowercased() {
                case "production": options.sandbox = false
                case "sandbox": options.sandbox = true
                default: throw .usage("--environment takes production or sandbox")
                }
            case "--bundle-id": options.bundleId = try arguments.value(for: flag)
            default: throw .unknownArgument(flag)
            }
        }
        guard let since else {
            throw .usage(
                "--since is required: from when to recover notifications (for example the start of the outage)")
        }
        options.sinceMs = since
        options.untilMs = until ?? nowMs
        guard options.sinceMs < options.untilMs else {
            throw .usage("--since must be before --until")
        }
        let oldest = nowMs - options.retentionDays * 86_400_000
        guard options.sinceMs >= oldest else {
            throw .usage(
                "--since is more than \(options.retentionDays) days ago: Apple keeps \(options.retentionDays) days of "
                    + "\(options.sandbox ? "sandbox" : "production") notification history")
        }
        return options
    }
}
